#!/usr/bin/env bash
# Installs everything the tests need (Python packages; Debian's chromium and, so that Hangul renders in the
# Korean screenshots, fonts-noto-cjk for the browser tests; nginx for the classroom proxy test; postgresql for the
# class store's PostgreSQL half), starts a throwaway PostgreSQL server (its URL in ATTENTION_LAB_TEST_PG), then runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 || ! dpkg -s fonts-noto-cjk >/dev/null 2>&1 || ! [ -x /usr/sbin/nginx ] \
    || ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  PACKAGES="chromium fonts-noto-cjk nginx-light postgresql"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PACKAGES >/dev/null; else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PACKAGES >/dev/null; fi
fi
python -m pip install -q -r requirements-dev.txt
python -m ruff check transformer ui pages tests bench streamlit_app.py
python -m ruff format --check transformer ui pages tests bench streamlit_app.py
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/attention-lab-pg.XXXXXX")"
  trap 'python -m tests.postgres_server stop "$PG_DIR"; rm -rf "$PG_DIR"' EXIT
  ATTENTION_LAB_TEST_PG="$(python -m tests.postgres_server start "$PG_DIR")"
  export ATTENTION_LAB_TEST_PG
  echo "PostgreSQL for the class-store tests: $ATTENTION_LAB_TEST_PG"
else
  echo "PostgreSQL is not installed: the class store's PostgreSQL tests will be skipped" >&2
fi
python -m pytest -q "$@"
