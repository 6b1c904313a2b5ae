"""First visit of each page: a fresh browser session on a warm server, timed until the page is drawn.

A class opens the app when the teacher says so: the server is already running and has served every
page once (its models are loaded and cached), but each student's browser is a new session. This
benchmark times exactly that, per page: a new browser context (no cookies, no session) opens
``/<page>?lang=..`` and the clock stops when the page is done — a title shown, Streamlit's "running"
indicator and every spinner gone — and has stayed so for 1.5 s (the time reported is when that quiet
spell began). It also reads the server's own CPU seconds for each visit from /proc, so that the server's
work and the browser's drawing can be told apart.

With ``--before DIR`` (a checkout of another commit, e.g. ``git worktree add /tmp/before <commit>``)
it serves both and visits them interleaved — page by page, round by round, alternating which goes
first — so that both see the same load on this shared machine.

    python bench/bench_first_visit.py --rounds 5 [--before /tmp/before] [--lang ko] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_server import cpu_seconds, load_average, start_server, wait_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
PAGES = (
    "", "playground", "attention", "positional_encoding", "masks", "classifier", "translate", "generate",
    "fill_mask", "similarity", "head_atlas", "residual", "train", "vision", "checkpoints",
)  # fmt: skip
DONE = """() => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  const spinner = document.querySelector('[data-testid="stSpinner"]');
  const skeleton = document.querySelector('[data-testid="stSkeleton"]');
  return document.querySelector('h1') !== null && !status && !spinner && !skeleton;
}"""
QUIET_S = 1.5
POLL_S = 0.05


def visit(browser, url: str, timeout: float = 180) -> float:
    """Seconds from asking for ``url`` in a fresh browser context until the page has been done for QUIET_S."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    try:
        start = time.monotonic()
        page.goto(url, wait_until="commit", timeout=timeout * 1000)
        done_since = None
        while time.monotonic() - start < timeout:
            now = time.monotonic()
            if page.evaluate(DONE):
                done_since = done_since or now
                if now - done_since >= QUIET_S:
                    return done_since - start
            else:
                done_since = None
            time.sleep(POLL_S)
        raise TimeoutError(f"{url} was not done within {timeout} s")
    finally:
        context.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--before", default=None, help="a checkout of the commit to compare with, served beside this one")
    p.add_argument("--lang", default="en", choices=("en", "ko"))
    p.add_argument("--pages", default=",".join(PAGES), help="comma-separated url paths ('' is Start)")
    p.add_argument("--out", default=None, help="write the results here as JSON")
    args = p.parse_args()
    from playwright.sync_api import sync_playwright

    pages = args.pages.split(",")
    trees = {"after": ROOT}
    if args.before:
        trees = {"before": Path(args.before).resolve(), **trees}
    servers, urls = {}, {}
    for i, (name, tree) in enumerate(trees.items()):
        port = 8620 + i
        servers[name] = start_server(port, tree)
        urls[name] = f"http://127.0.0.1:{port}"
    times = {name: {page: [] for page in pages} for name in trees}
    server_cpu = {name: {page: [] for page in pages} for name in trees}
    try:
        for url in urls.values():
            wait_healthy(url)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            for url in urls.values():  # warm: every model loaded and cached, every page run once
                for page in pages:
                    visit(browser, f"{url}/{page}?lang={args.lang}")
            for r in range(args.rounds):
                for page in pages:
                    order = list(urls) if r % 2 == 0 else list(reversed(urls))
                    for name in order:
                        before_cpu = cpu_seconds([servers[name].pid])
                        seconds = visit(browser, f"{urls[name]}/{page}?lang={args.lang}")
                        times[name][page].append(round(seconds, 3))
                        server_cpu[name][page].append(round(cpu_seconds([servers[name].pid]) - before_cpu, 2))
                        print(f"round {r + 1} {name:6s} /{page:20s} {seconds:6.2f} s", flush=True)
            browser.close()
    finally:
        for server in servers.values():
            server.terminate()
            server.wait(timeout=20)
    result = {
        "method": "fresh browser context per visit on a warm server, 1366x768, done = title shown, no running "
        f"indicator or spinner for {QUIET_S} s; median of {args.rounds} rounds, visits interleaved",
        "lang": args.lang,
        "load_average_at_end": load_average(),
        "median_s": {n: {pg: statistics.median(v) for pg, v in t.items()} for n, t in times.items()},
        "server_cpu_median_s": {n: {pg: statistics.median(v) for pg, v in t.items()} for n, t in server_cpu.items()},
        "seconds": times,
        "server_cpu_s": server_cpu,
    }
    print(json.dumps(result["median_s"], indent=1))
    print(json.dumps(result["server_cpu_median_s"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
