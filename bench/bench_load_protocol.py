"""The load test with protocol clients (bench/load_protocol.py): ``python bench/bench_load.py --client protocol``.

The sessions and rounds are the browser client's (bench/bench_load.py) and both write their summary
with bench/load_results.py, so the two JSON summaries compare field for field. ``--hostile K`` adds K hostile sessions beside them, speaking the
protocol too (bench/load_corpus.py's corpus: each hostile file through the Checkpoints page's uploader,
each bad text through the Playground's sentence box, each from a fresh session); LOAD_HOSTILE_CLIENT=browser
(or ``--hostile-client browser`` where bench_load.py offers it) keeps the chromium ones, which share the
client's cores with everything else.
Times are BackMsg sent → script_finished: server work and transfer, without the browser's rendering.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import time
import urllib.parse
from pathlib import Path

from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from bench.load_corpus import (  # noqa: E402
    BAD_TEXTS,
    expected_labels,
    hostile_session,
    sentence,
    signature,
)
from bench.load_protocol import MAIN, SIDEBAR, ProtocolSession, View, hostile_client  # noqa: E402
from bench.load_results import Results, load_summary, percentile, summarize_times  # noqa: E402
from bench.load_server import cpu_seconds, rss_mb, sample_rss, settle_cpu  # noqa: E402

TIMING = "BackMsg sent -> script_finished of the run that showed the result (server + transfer; no browser rendering)"


def first_query(text: str) -> str:
    return urllib.parse.urlencode({"lang": "en", "text": text})


def no_shell(view: View) -> bool:
    """The last run drew no sidebar at all: the entry script (navigation, sidebar) did not run."""
    return not any(path[0] == SIDEBAR for path in view.elements)


class Scripted:
    """One session's actions, each returning its seconds; failures raise."""

    def __init__(self, url: str, number: int, args):
        self.session, self.number, self.args = ProtocolSession(url, args.action_timeout), number, args
        self.reported = 0  # exceptions already counted

    async def open(self) -> float:
        start = time.monotonic()
        text = sentence(self.number, 0)
        # a run drawn without the sidebar ends the wait too: a fresh server can draw a page alone
        await self.session.open("playground", first_query(text), lambda v: v.markdown_contains(text) or no_shell(v))
        if no_shell(self.session.view):
            raise RuntimeError("the page was drawn without the sidebar (a fresh server's first runs)")
        return time.monotonic() - start

    async def playground(self, text: str) -> float:
        seconds = 0.0
        if self.session.view.pages.get("playground") != self.session.view.page_hash:
            seconds += await self.session.switch("playground", lambda v: v.widget("text", "text_area") is not None)
        box = self.session.view.widget("text", "text_area")
        if box is None:
            raise RuntimeError("no sentence box on the Playground")
        return seconds + await self.session.set_value(box, text, lambda v: v.markdown_contains(text))

    async def attention(self, labels: list[str]) -> float:
        return await self.session.switch("attention", lambda v: (v.heatmap() or {}).get("y") == labels)

    async def choose(self, label: str, labels: list[str]) -> float:
        view = self.session.view
        old = (view.heatmap() or {}).get("title")
        box = view.widget(label, "selectbox")
        if box is None or not box.options:
            raise RuntimeError(f"no {label!r} selectbox on the Attention page")
        sent = self.session.states.get(box.id)
        current = sent.string_value if sent is not None else box.value
        index = box.options.index(current) if current in box.options else 0
        option = box.options[(index + 1) % len(box.options)]

        def shown(v: View) -> bool:
            heat = v.heatmap() or {}
            return heat.get("y") == labels and heat.get("title") != old

        return await self.session.set_value(box, option, shown)

    async def upload(self, path: Path, results: Results) -> None:
        """Checkpoints page: upload ``path`` (``upload``: until recognised), then use it (``use_model``)."""
        await self.session.switch("checkpoints", lambda v: any(w.kind == "file_uploader" for w in v.widgets()))
        uploader = next(w for w in self.session.view.widgets() if w.kind == "file_uploader" and w.root == MAIN)

        def outcome(v: View) -> bool:
            return v.primary_button() is not None or v.alert_error() is not None

        await timed(self, "upload", lambda: self.session.upload(uploader, path, outcome), results)
        if (error := self.session.view.alert_error()) is not None:
            raise RuntimeError(f"the upload was refused: {error[:200]}")
        name = path.stem

        def selected(v: View) -> bool:
            model = v.widget("Model", "selectbox", root=SIDEBAR)
            return model is not None and name in model.value

        button = self.session.view.primary_button()
        await timed(self, "use_model", lambda: self.session.click(button, selected), results)

    def steps(self, text: str) -> list[tuple[str, object]]:
        labels = expected_labels(text)
        return [
            ("playground", lambda: self.playground(text)),
            ("attention", lambda: self.attention(labels)),
            ("layer", lambda: self.choose("Layer", labels)),
            ("head", lambda: self.choose("Head", labels)),
        ]

    def check(self, action: str, results: Results) -> None:
        """Exceptions drawn since the last check, and protocol surprises."""
        view = self.session.view
        for text in view.exceptions[self.reported :]:
            results.exceptions.append(f"s{self.number} {action}: {text}")
        self.reported = len(view.exceptions)
        for error in view.protocol_errors:
            results.errors.append(f"s{self.number} {action}: {error}")
        view.protocol_errors.clear()

    def crosstalk(self, sessions: int, where: str, results: Results) -> None:
        for other in range(sessions):
            view = self.session.view
            upload = re.compile(rf"loadtest-s{other}(?!\d)".encode())  # not s1 inside s10's own name
            if other != self.number and (view.contains(signature(other)) or view.matches(upload)):
                results.crosstalk.append(f"s{self.number} saw session {other}'s text or upload on {where}")


async def timed(script: Scripted, action: str, step, results: Results) -> None:
    if think := getattr(script.args, "think", 0):  # not timed: the student reads the last result
        await asyncio.sleep(random.uniform(0, 2 * think))
    try:
        seconds = await step()
    except Exception:
        results.failed[action] = results.failed.get(action, 0) + 1
        raise
    results.record(action, seconds)
    script.check(action, results)


async def one_round(script: Scripted, round_: int, args, results: Results) -> None:
    try:
        for action, step in script.steps(sentence(script.number, round_ + 1)):
            await timed(script, action, step, results)
        script.crosstalk(args.sessions, "Attention", results)
        results.rounds["ok"] += 1
    except Exception as err:
        timed_out = isinstance(err, (TimeoutError, asyncio.TimeoutError))
        results.rounds["timed_out" if timed_out else "failed"] += 1
        results.errors.append(f"s{script.number} r{round_}: {type(err).__name__}: {str(err)[:200]}")


async def normal_session(url: str, number: int, args, results: Results, upload: Path | None, deadline: float) -> None:
    script, done = Scripted(url, number, args), 0
    try:
        await asyncio.sleep(args.ramp * number / max(1, args.sessions))
        results.record("first_load", await script.open())
        script.check("first_load", results)
        if upload is not None:
            try:
                await script.upload(upload, results)
            except Exception as err:  # counted as a failed upload; the rounds still run
                results.errors.append(f"s{number} upload: {type(err).__name__}: {str(err)[:200]}")
        for round_ in range(args.rounds):
            if time.monotonic() > deadline:
                break
            await one_round(script, round_, args, results)
            done += 1
    except asyncio.CancelledError:
        results.rounds["timed_out"] += 1
        done += 1
        raise
    except Exception as err:  # the session could not open: its rounds count as failed
        results.errors.append(f"s{number}: {type(err).__name__}: {str(err)[:200]}")
        results.rounds["failed"] += args.rounds - done
        done = args.rounds
    finally:
        results.rounds["not_run"] += args.rounds - done
        await script.session.close()


# ---------- hostile sessions over the protocol (the browser ones: bench/load_corpus.hostile_session) ----------


async def feed_file(url: str, path: Path, args) -> dict:
    """A new session opens the Checkpoints page and uploads one hostile file; what the page said, how fast."""
    session = ProtocolSession(url, args.action_timeout)
    try:
        await session.open("checkpoints", "lang=en", lambda v: any(w.kind == "file_uploader" for w in v.widgets()))
        uploader = next(w for w in session.view.widgets() if w.kind == "file_uploader" and w.root == MAIN)
        start = time.monotonic()
        try:
            seconds = await session.upload(uploader, path, lambda v: v.outcome() is not None)
        except TimeoutError:
            return {"input": path.name, "outcome": "timed out", "s": round(time.monotonic() - start, 2)}
        return {"input": path.name, "outcome": session.view.outcome(), "s": round(seconds, 2)}
    finally:
        await session.close()


async def feed_picture(url: str, path: Path, args) -> dict:
    """A new session opens the Vision page, picks "Upload" as its picture and uploads one hostile
    picture: the page's message ("refused: ..."), an exception, or "accepted" (drawn without either)."""
    session = ProtocolSession(url, args.action_timeout)
    try:
        await session.open("vision", "lang=en", lambda v: v.widget("Picture", "radio") is not None)
        source = session.view.widget("Picture", "radio")
        await session.set_value(source, "Upload", lambda v: any(w.kind == "file_uploader" for w in v.widgets()))
        uploader = next(w for w in session.view.widgets() if w.kind == "file_uploader" and w.root == MAIN)
        start = time.monotonic()
        try:
            seconds = await session.upload(uploader, path, lambda v: True)  # any finished run after it
        except TimeoutError:
            return {"input": path.name, "outcome": "timed out", "s": round(time.monotonic() - start, 2)}
        return {"input": path.name, "outcome": session.view.outcome() or "accepted", "s": round(seconds, 2)}
    finally:
        await session.close()


async def feed_text(url: str, name: str, text: str, args) -> dict:
    """A new session opens the Playground and puts one bad text in the sentence box: did the page raise?"""
    session = ProtocolSession(url, args.action_timeout)
    try:
        await session.open("playground", "lang=en", lambda v: v.widget("text", "text_area") is not None)
        box = session.view.widget("text", "text_area")
        start = time.monotonic()
        try:
            seconds = await session.set_value(box, text, lambda v: True)  # any finished run after it
        except TimeoutError:
            return {"input": name, "outcome": "timed out", "s": round(time.monotonic() - start, 2)}
        shown = session.view.outcome() == "exception"
        return {"input": name, "outcome": "exception" if shown else "ok", "s": round(seconds, 2)}
    finally:
        await session.close()


def interleaved(first: list, second: list) -> list:
    """first[0], second[0], first[1], second[1], ..., then the rest of the longer one."""
    out = [x for pair in zip(first, second, strict=False) for x in pair]
    return out + first[len(second) :] + second[len(first) :]


async def hostile_protocol_session(url: str, number: int, args, rows: list[dict], files: list[Path], stop) -> None:
    """Feeds every hostile file and bad text, each from a fresh session, until the normal sessions are done."""
    inputs = interleaved([("file", p) for p in files], [("text", item) for item in BAD_TEXTS.items()])
    step = number * len(inputs) // max(1, args.hostile)  # spread over the corpus: a short run still sees most
    while not stop.is_set():
        kind, item = inputs[step % len(inputs)]
        step += 1
        try:
            if kind == "file" and item.suffix == ".png":
                row = await feed_picture(url, item, args)
            elif kind == "file":
                row = await feed_file(url, item, args)
            else:
                row = await feed_text(url, item[0], item[1], args)
        except Exception as err:
            row = {"input": str(item[0] if kind == "text" else item.name), "outcome": f"error: {err!s:.120}"}
        rows.append({"session": number, **row})


async def solo(url: str, pids: list[int], args) -> dict:
    """Server CPU milliseconds per action type, one protocol session alone: median over ``args.solo`` rounds."""
    results, cpu = Results(), {}
    script = Scripted(url, 99, argparse.Namespace(**{**vars(args), "think": 0}))  # alone: no pauses
    try:
        await script.open()
        for round_ in range(args.solo):
            for action, step in script.steps(sentence(99, round_ + 1)):
                before = await settle_cpu(pids)
                await timed(script, action, step, results)
                cpu.setdefault(action, []).append(await settle_cpu(pids) - before)
    finally:
        await script.session.close()
    return {
        "server_cpu_ms": {a: round(1000 * percentile(v, 0.5), 1) for a, v in cpu.items()},
        "wall": summarize_times(results),
        "errors": results.errors + results.exceptions,
    }


async def load(url: str, pids: list[int], args, uploads: dict[int, Path], files: list) -> dict:
    results, stop, peaks = Results(), asyncio.Event(), {}
    deadline = time.monotonic() + args.max_seconds
    cpu_before, start, rss_before = cpu_seconds(pids), time.monotonic(), rss_mb(pids)
    cpu_each = {pid: cpu_seconds([pid]) for pid in pids}  # per replica: does the proxy spread the class?
    client_before = time.process_time()
    sampler = asyncio.create_task(sample_rss(pids, peaks, stop)) if pids else None
    browser, playwright, hostile = None, None, []
    if args.hostile and hostile_client(args) == "protocol":
        hostile = [
            asyncio.create_task(hostile_protocol_session(url, k, args, results.hostile, files, stop))
            for k in range(args.hostile)
        ]
    elif args.hostile:  # the hostile sessions feed files through a real browser, beside the protocol clients
        from playwright.async_api import async_playwright

        from tests.browser_server import BROWSER_ARGS, CHROMIUM

        playwright = await async_playwright().start()
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        hostile = [
            asyncio.create_task(hostile_session(browser, url, k, args, results.hostile, files, stop))
            for k in range(args.hostile)
        ]
    normal = [
        asyncio.create_task(normal_session(url, i, args, results, uploads.get(i), deadline))
        for i in range(args.sessions)
    ]
    try:
        _, late = await asyncio.wait(normal, timeout=args.max_seconds + args.action_timeout)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        stop.set()
        await asyncio.gather(*hostile, *([sampler] if sampler else []))
    finally:
        if browser is not None:
            await browser.close()
            await playwright.stop()
    cpu = cpu_seconds(pids) - cpu_before if pids else None
    client_cpu = time.process_time() - client_before  # all protocol sessions together (chromium not included)
    summary = load_summary(results, time.monotonic() - start, cpu, rss_before, peaks)
    summary["server"]["cpu_s_by_pid"] = {str(pid): round(cpu_seconds([pid]) - b, 2) for pid, b in cpu_each.items()}
    return {
        "client": "protocol",
        "timing": TIMING,
        "client_cpu_s": round(client_cpu, 2),
        **summary,
        "hostile_client": hostile_client(args) if args.hostile else None,
    }


async def run(args, url: str, pids: list[int], uploads: dict[int, Path], files: list) -> dict:
    """The solo measurement (with ``pids``), then the load; the summary bench_load.py prints."""
    quiet = await solo(url, pids, args) if args.solo and pids else None
    summary = await load(url, pids, args, uploads, files)
    summary["solo"] = quiet
    return summary
