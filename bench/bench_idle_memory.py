"""A server's resident memory while idle, after one visitor opened every page and left (issue 28: a
replica's idle memory). Starts the app as README does, opens each page in Debian's chromium one after
the other (waiting until the app is idle), closes the browser, waits 40 s and reads the server's RSS.

    python bench/bench_idle_memory.py --out bench/results/idle_memory.json
"""

from __future__ import annotations

import argparse
import sys
import time

from shared import ROOT, write_report

PAGES = (
    "", "playground", "attention", "positional_encoding", "masks", "classifier", "translate",
    "generate", "fill_mask", "head_atlas", "vision", "checkpoints",
)  # fmt: skip


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) / 1000 for line in f if line.startswith("VmRSS"))


def wait_idle(page, timeout_s: float = 120) -> None:
    """Until Streamlit's running indicator has been gone for two seconds."""
    deadline, quiet = time.monotonic() + timeout_s, 0
    time.sleep(1.5)
    while time.monotonic() < deadline and quiet < 4:
        quiet = 0 if page.get_by_test_id("stStatusWidget").count() else quiet + 1
        time.sleep(0.5)


def visit_every_page(url: str, pid: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT))
    from tests.browser_server import launch

    after = {}
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        for name in PAGES:
            page.goto(f"{url}/{name}", timeout=240_000)
            wait_idle(page)
            after[name or "start"] = round(rss_mb(pid), 1)
        browser.close()
    return after


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.browser_server import serving_app

    with serving_app() as (url, server):
        time.sleep(2)
        started = round(rss_mb(server.pid), 1)
        after = visit_every_page(url, server.pid)
        time.sleep(40)
        idle = round(rss_mb(server.pid), 1)
    write_report({"rss_mb_started": started, "rss_mb_after_page": after, "rss_mb_idle_40s_after_close": idle}, args.out)


if __name__ == "__main__":
    main()
