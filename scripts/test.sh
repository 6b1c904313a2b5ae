#!/usr/bin/env bash
# Installs everything the tests need (Python packages; Debian's chromium and, so that Hangul renders in the
# Korean screenshots, fonts-noto-cjk for the browser tests; nginx for the classroom proxy test), then runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s fonts-noto-cjk >/dev/null 2>&1 || ! [ -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk nginx-light >/dev/null; else sudo apt-get update -qq && sudo apt-get install -y -qq chromium fonts-noto-cjk nginx-light >/dev/null; fi
fi
python -m pip install -q -r requirements-dev.txt
python -m ruff check transformer ui pages tests bench streamlit_app.py
python -m pytest -q "$@"
