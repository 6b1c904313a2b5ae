"""Load test: N headless-chromium sessions use the app at once; prints a JSON summary.

Run: python bench/bench_load.py --sessions 10 --rounds 3 [--url http://127.0.0.1:8080 --pids 123,456]
     [--hostile 2] [--uploads-every 5] [--max-seconds 300] [--action-timeout 60] [--solo 3]
     [--client browser|protocol]

``--client protocol`` runs the same sessions over Streamlit's WebSocket protocol instead of chromium
(bench/load_protocol.py: cheap enough for 30-40 sessions on a small machine; times exclude the
browser's rendering); hostile sessions still use chromium.

Without --url it starts its own server (one streamlit process, 1 torch thread) on a free port.
Each session opens the Playground, then per round: types its own sentence and waits for its result
(``playground``), opens Attention and waits for the heatmap of its sentence (``attention``), changes
the layer (``layer``) and the head (``head``). Every ``--uploads-every``-th session first uploads a
small model of its own on the Checkpoints page (``upload``: file → recognised; ``use_model``: click
→ selected in its sidebar). ``--hostile K`` adds K sessions that feed bench/load_corpus.py's bad
texts and hostile files meanwhile. Reported: p50/p95 seconds action → render per action, failed and
timed-out rounds, exceptions shown on pages, crosstalk (a session seeing another's sentence or
upload), server RSS and server CPU seconds per action (utime + stime of the server's process tree,
from /proc; ``--solo`` repeats of each action by one session before the load give CPU per action type).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import tempfile
import time
import urllib.parse
from pathlib import Path

from playwright.async_api import TimeoutError as PlaywrightTimeout
from shared import ROOT  # also puts the repository on sys.path

from bench.load_corpus import (  # noqa: E402
    expected_labels,
    hostile_files,
    hostile_pictures,
    hostile_session,
    sentence,
    signature,
    traces,
    upload_bundle,
)
from bench.load_results import Results, load_summary, percentile, summarize_times  # noqa: E402
from bench.load_server import (  # noqa: E402
    alive,
    cpu_seconds,
    load_average,
    rss_mb,
    sample_rss,
    settle_cpu,
    start_server,
    wait_healthy,
)
from tests.browser_server import BROWSER_ARGS, CHROMIUM, free_port  # noqa: E402

HEATMAP = """() => { const gd = [...document.querySelectorAll('.js-plotly-plot')]
  .find(p => p.layout && p.layout.meta === 'attention-heatmap');
  return gd ? {title: String((gd.layout.title || {}).text || ''), y: Array.from(gd.data[0].y)} : null; }"""
PAGE_DONE = """path => location.pathname === path && !document.querySelector('[data-testid=stStatusWidget]')
  && !document.querySelector('[data-stale=true]')"""
UPLOAD_DONE = """() => { const main = document.querySelector('[data-testid=stMain]');
  const error = main && main.querySelector('[data-testid=stAlertContentError]');
  return error ? 'error: ' + error.innerText : !!(main && main.querySelector('[data-testid=stBaseButton-primary]')); }"""
SIDEBAR_VALUES = """() => [...document.querySelectorAll('[data-testid=stSidebar] input')].map(i => i.value)"""
SIDEBAR_MODEL = (
    """name => [...document.querySelectorAll('[data-testid=stSidebar] input')].some(i => i.value.includes(name))"""
)
QUOTED = """s => [...document.querySelectorAll('[data-testid=stMain] blockquote')].some(b => b.innerText.includes(s))"""


# ---------- one browser session ----------


class Session:
    def __init__(self, context, url: str, number: int, args, results: Results):
        self.context, self.url, self.number, self.args, self.results = context, url, number, args, results
        self.page, self.where = None, ""
        self.timeout_ms = args.action_timeout * 1000

    async def open(self) -> None:
        self.page = await self.context.new_page()
        self.page.set_default_timeout(self.timeout_ms)
        start = time.monotonic()
        await self.page.goto(f"{self.url}/?lang=en", wait_until="domcontentloaded")
        await self.nav("playground")  # the default page is the Playground or a start page
        await self.textbox().wait_for(timeout=3 * self.timeout_ms)  # a cold server imports and loads first
        self.results.record("first_load", time.monotonic() - start)

    def textbox(self):
        return self.page.locator("[data-testid=stMain] textarea").first

    async def timed(self, action: str, coroutine) -> None:
        """Run one action; its wall time goes to ``action``; raises on failure (after counting it)."""
        start = time.monotonic()
        try:
            await coroutine
        except Exception:
            self.results.failed[action] = self.results.failed.get(action, 0) + 1
            raise
        self.results.record(action, time.monotonic() - start)
        await self.check_page(action)

    async def check_page(self, action: str) -> None:
        for text in await self.page.locator("[data-testid=stException]").all_inner_texts():
            self.results.exceptions.append(f"s{self.number} {action}: {text[:300]}")

    async def nav(self, path: str) -> None:
        """Open a page from the sidebar (the link to ``/path``, or the default page named like it) and
        wait until its run has finished, so what is typed next is not replaced by the page switch."""
        links = self.page.locator("[data-testid=stSidebarNav] a")
        await links.first.wait_for()
        by_href = links.and_(self.page.locator(f'a[href$="/{path}"]'))
        target = by_href if await by_href.count() else links.filter(has_text=re.compile(path, re.IGNORECASE))
        pathname = urllib.parse.urlparse(await target.first.get_attribute("href") or "/").path
        await target.first.click()
        for _ in range(2):  # the run may start a moment after the address changes
            await self.page.wait_for_function(PAGE_DONE, arg=pathname)
            await asyncio.sleep(0.3)
        self.where = path

    async def playground(self, text: str) -> None:
        """Type ``text``, run it, wait for its quote; types again if a page switch overwrote the box."""
        if self.where != "playground":
            await self.nav("playground")
        box, deadline = self.textbox(), time.monotonic() + self.args.action_timeout
        while True:
            await box.fill(text)
            await box.press("Control+Enter")
            try:
                await self.page.wait_for_function(QUOTED, arg=text, timeout=10_000)
                return
            except PlaywrightTimeout:
                if time.monotonic() > deadline:
                    raise
                if await box.input_value() == text:  # still ours: the server is slow, keep waiting
                    await self.page.wait_for_function(
                        QUOTED, arg=text, timeout=max(1, deadline - time.monotonic()) * 1000
                    )
                    return

    async def heatmap(self, labels: list[str], old_title: str | None = None) -> dict:
        """Wait until the heatmap shows ``labels`` (and a title other than ``old_title``)."""
        deadline = time.monotonic() + self.args.action_timeout
        while time.monotonic() < deadline:
            data = await self.page.evaluate(HEATMAP)
            if data and data["y"] == labels and data["title"] != old_title:
                return data
            await asyncio.sleep(0.1)
        raise TimeoutError(f"heatmap not shown in {self.args.action_timeout} s")

    async def attention(self, labels: list[str]) -> None:
        await self.nav("attention")
        await self.heatmap(labels)

    async def choose(self, label: str, count: int, labels: list[str]) -> None:
        """Move the main area's selectbox ``label`` (options 1..count) to its next option; wait for the heatmap."""
        old = (await self.page.evaluate(HEATMAP) or {}).get("title")
        combo = self.page.locator("[data-testid=stMain]").get_by_role("combobox", name=label, exact=True)
        current = await combo.input_value()
        await combo.click()
        option = str(int(current) % count + 1) if current.isdigit() else "2"
        await self.page.get_by_role("option", name=option, exact=True).click()
        await self.heatmap(labels, old)

    async def upload(self, path: Path) -> None:
        """Upload a bundle on the Checkpoints page and select it (two timed actions)."""
        await self.nav("checkpoints")
        chooser = self.page.locator("[data-testid=stMain] [data-testid=stFileUploader] input[type=file]").first
        await chooser.wait_for(state="attached")
        use = self.page.locator("[data-testid=stMain] [data-testid=stBaseButton-primary]")
        await self.timed("upload", self._set_file(chooser, path, use))
        await self.timed("use_model", self._click_and_wait(use, path.stem))

    async def _set_file(self, chooser, path: Path, use) -> None:
        await chooser.set_input_files(str(path))
        outcome = await (await self.page.wait_for_function(UPLOAD_DONE)).json_value()
        if outcome is not True:
            raise RuntimeError(f"the upload was refused: {outcome[:200]}")

    async def _click_and_wait(self, button, name: str) -> None:
        await button.first.click()
        await self.page.wait_for_function(SIDEBAR_MODEL, arg=name)

    async def crosstalk(self, own: int, sessions: int, where: str) -> None:
        text = await self.page.locator("body").inner_text() + str(await self.page.evaluate(SIDEBAR_VALUES))
        for other in range(sessions):
            if other != own and (signature(other) in text or re.search(rf"loadtest-s{other}(?!\d)", text)):
                self.results.crosstalk.append(f"s{own} saw session {other}'s text or upload on {where}")


async def normal_session(browser, url: str, number: int, args, results: Results, upload: Path | None, deadline):
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    session, done = Session(context, url, number, args, results), 0
    try:
        await asyncio.sleep(args.ramp * number / max(1, args.sessions))
        await session.open()
        if upload is not None:
            try:
                await session.upload(upload)
            except Exception as err:  # counted as a failed upload; the rounds still run
                results.errors.append(f"s{number} upload: {type(err).__name__}: {str(err)[:200]}")
                session.where = ""
        for round_ in range(args.rounds):
            if time.monotonic() > deadline:
                break
            await one_round(session, number, round_, args, results)
            done += 1
    except asyncio.CancelledError:
        results.rounds["timed_out"] += 1
        done += 1
        raise
    except Exception as err:  # the session could not open or upload: its rounds count as failed
        results.errors.append(f"s{number}: {type(err).__name__}: {str(err)[:200]}")
        results.rounds["failed"] += args.rounds - done
        done = args.rounds
    finally:
        results.rounds["not_run"] += args.rounds - done
        await context.close()


def round_steps(session: Session, text: str, args) -> list[tuple[str, object]]:
    """The timed actions of one round, as (name, coroutine function)."""
    labels = expected_labels(text)
    return [
        ("playground", lambda: session.playground(text)),
        ("attention", lambda: session.attention(labels)),
        ("layer", lambda: session.choose("Layer", args.layers, labels)),
        ("head", lambda: session.choose("Head", args.heads, labels)),
    ]


async def one_round(session: Session, number: int, round_: int, args, results: Results) -> None:
    """One round; a failure is counted (failed or timed out) and the session goes on with the next."""
    steps = round_steps(session, sentence(number, round_), args)
    try:
        for action, step in steps:
            await session.timed(action, step())
        await session.crosstalk(number, args.sessions, "Attention")
        results.rounds["ok"] += 1
    except Exception as err:
        timed_out = "Timeout" in type(err).__name__ or "Timeout" in str(err)[:40]
        results.rounds["timed_out" if timed_out else "failed"] += 1
        results.errors.append(f"s{number} r{round_}: {type(err).__name__}: {str(err)[:200]}")


# ---------- server CPU per action, measured alone before the load ----------


async def solo(browser, url: str, pids: list[int], args) -> dict:
    """Server CPU milliseconds per action type, one session alone: median over ``args.solo`` rounds."""
    results = Results()
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    session = Session(context, url, 99, args, results)
    cpu: dict[str, list[float]] = {}
    try:
        await session.open()
        for round_ in range(args.solo):
            for action, step in round_steps(session, sentence(99, round_), args):
                before = await settle_cpu(pids)
                await session.timed(action, step())
                cpu.setdefault(action, []).append(await settle_cpu(pids) - before)
    finally:
        await context.close()
    return {
        "server_cpu_ms": {a: round(1000 * percentile(v, 0.5), 1) for a, v in cpu.items()},
        "wall": summarize_times(results),
        "errors": results.errors + results.exceptions,
    }


# ---------- the run ----------


async def load(browser, url: str, pids: list[int], args, uploads: dict[int, Path], files: list[Path]) -> dict:
    results, stop, peaks = Results(), asyncio.Event(), {}
    deadline = time.monotonic() + args.max_seconds
    cpu_before, start, rss_before = cpu_seconds(pids), time.monotonic(), rss_mb(pids)
    sampler = asyncio.create_task(sample_rss(pids, peaks, stop)) if pids else None
    hostile = [
        asyncio.create_task(hostile_session(browser, url, k, args, results.hostile, files, stop))
        for k in range(args.hostile)
    ]
    normal = [
        asyncio.create_task(normal_session(browser, url, i, args, results, uploads.get(i), deadline))
        for i in range(args.sessions)
    ]
    _, late = await asyncio.wait(normal, timeout=args.max_seconds + args.action_timeout)
    for task in late:  # rounds still running this long after the last start are cut off (timed out)
        task.cancel()
    await asyncio.gather(*late, return_exceptions=True)
    stop.set()
    await asyncio.gather(*hostile, *([sampler] if sampler else []))
    cpu = cpu_seconds(pids) - cpu_before if pids else None
    return load_summary(results, time.monotonic() - start, cpu, rss_before, peaks)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--url", help="an app or proxy already running; without it a server is started here")
    p.add_argument("--pids", default="", help="comma-separated server PIDs to measure (with --url)")
    p.add_argument("--app-dir", default=str(ROOT), help="the checkout whose app is started (without --url)")
    p.add_argument("--hostile", type=int, default=0, help="extra sessions feeding bad texts and hostile files")
    p.add_argument("--uploads-every", type=int, default=5, help="every k-th session uploads a model (0: none)")
    p.add_argument("--max-seconds", type=float, default=300, help="no round starts after this")
    p.add_argument("--action-timeout", type=float, default=60)
    p.add_argument("--ramp", type=float, default=10, help="seconds over which the sessions open")
    p.add_argument("--solo", type=int, default=3, help="rounds of one session alone first, for CPU per action")
    p.add_argument("--settle", type=float, default=20, help="seconds to wait before RSS after the sessions close")
    p.add_argument(
        "--hostile-client",
        choices=("protocol", "browser"),
        default=None,
        help="how hostile sessions talk to the app (default: as --client)",
    )
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--client", choices=("browser", "protocol"), default="browser",
                   help="chromium sessions, or Streamlit's WebSocket protocol spoken directly")  # fmt: skip
    p.add_argument("--think", type=float, default=0,
                   help="protocol client: mean pause before each action, uniform in 0..2x (a student reading)")  # fmt: skip
    args = p.parse_args()
    if not 0 < args.sessions < 99:
        p.error("--sessions: 1 to 98")
    return args


async def run(args, url: str, pids: list[int], uploads: dict[int, Path], files: list[Path]) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            quiet = await solo(browser, url, pids, args) if args.solo and pids else None
            summary = await load(browser, url, pids, args, uploads, files)
        finally:
            await browser.close()
    summary["solo"] = quiet
    return summary


def main() -> None:
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-load-"))
    every = args.uploads_every
    uploads = {i: upload_bundle(work, i, Path(args.app_dir)) for i in range(args.sessions) if every and i % every == 0}
    files = []
    if args.hostile:  # checkpoints and pictures alternate, so a short run feeds both kinds
        checkpoints, pictures = hostile_files(work / "hostile", work / "traces"), hostile_pictures(work / "pictures")
        files = [f for pair in zip(checkpoints, pictures, strict=False) for f in pair] + checkpoints[len(pictures) :]
    server = None
    if args.url:
        url, pids = args.url.rstrip("/"), [int(p) for p in args.pids.split(",") if p.strip()]
    else:
        port = free_port()
        server, url = start_server(port, Path(args.app_dir)), f"http://127.0.0.1:{port}"
        wait_healthy(url, 180, server)
        pids = [server.pid]
    started = {"load_average": load_average(), "time": time.strftime("%H:%M:%S")}
    try:
        if args.client == "protocol":
            from bench.bench_load_protocol import run as run_protocol

            summary = asyncio.run(run_protocol(args, url, pids, uploads, files))
        else:
            summary = asyncio.run(run(args, url, pids, uploads, files))
        time.sleep(args.settle)
        summary["server"]["rss_mb_after_close"] = [round(x) for x in rss_mb(pids)] if pids else None
        summary["server"]["alive"] = alive(pids)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    summary["traces_of_hostile_code"] = traces(work / "traces")
    summary["config"] = {k: v for k, v in vars(args).items()} | {"url": url, "pids": pids}
    summary["machine"] = {"cpus": os.cpu_count(), "start": started, "end_load_average": load_average()}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
