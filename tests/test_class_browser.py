"""A whole class in real browsers: one teacher (presenter mode, 1920×1080) and 30 students (1366×768) on two
replicas of the app behind the classroom nginx proxy (scripts/classroom_server.sh's config, as in
tests/test_classroom_config.py), one SQLite class store shared by both replicas.

The teacher starts a class, asks from the Attention page; the students open the join address, answer by
clicking a token; every answer must reach the teacher's count (whichever replica served the student),
and the reveal must reach every student's screen. Measured on the way (written to
``test-artifacts/class_browser.json``): the time from a student's click to the teacher's count (p50 /
p95, with the load average) and the server CPU that the students' polling costs per student.
Screenshots: /tmp/shots/class_*.png (or ``$ATTENTION_LAB_SHOTS``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.load_server import cpu_seconds, load_average, start_server, wait_healthy
from tests.browser_server import ARTIFACTS, BROWSER_ARGS, CHROMIUM, ROOT, needs_chromium
from tests.test_classroom_config import needs_nginx, nginx_args, render, two_free_ports

# Opt-in (ATTENTION_LAB_CLASS_BROWSER=1; 4-5 minutes on 2 cores, 31 browser tabs and two servers): the last four
# runs passed, five of the eight before the poll drew each change twice did not, so it does not yet gate CI; the
# AppTests of the same flows do. Every run is in docs/serving.md.
pytestmark = [
    needs_chromium,
    needs_nginx,
    pytest.mark.skipif(
        os.environ.get("ATTENTION_LAB_CLASS_BROWSER") != "1", reason="set ATTENTION_LAB_CLASS_BROWSER=1 to run it"
    ),
]
STUDENTS = int(os.environ.get("ATTENTION_LAB_CLASS_STUDENTS", "30"))  # fewer only for a quick look on a busy machine
SHOTS = Path(os.environ.get("ATTENTION_LAB_SHOTS", "/tmp/shots"))
WAIT_MS = 300_000
REVEAL_WAIT_S = 180.0  # the passing runs reached all 30 screens in 74 s
IDLE_S = 20.0
DRAWN = '[data-testid="stPlotlyChart"] .js-plotly-plot:visible'  # a figure Plotly has drawn (not the hidden one)
JOINING = 3  # students opening the page at the same moment  # the window over which the polling's CPU is measured


@pytest.fixture
def classroom(tmp_path, monkeypatch):
    """Two replicas and nginx in front of them; yields (url, replica pids, data folder)."""
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path / "data"))
    first, listen = two_free_ports(), two_free_ports()
    while listen in (first, first + 1):
        listen = two_free_ports()
    replicas = [start_server(port, ROOT) for port in (first, first + 1)]
    conf = tmp_path / "nginx.conf"
    conf.write_text(render(tmp_path, replicas=2, port=listen, first=first))
    proxy = None
    try:
        for port, server in zip((first, first + 1), replicas):
            wait_healthy(f"http://127.0.0.1:{port}", 240, server)
        proxy = subprocess.Popen(nginx_args(tmp_path, conf), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{listen}"
        wait_healthy(url, 30)
        yield url, [r.pid for r in replicas], tmp_path / "data"
    finally:
        for process in [*replicas, *([proxy] if proxy else [])]:
            process.terminate()
        for process in [*replicas, *([proxy] if proxy else [])]:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


def nearest_rank(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def say(*what) -> None:
    """Progress on stderr (pytest -s shows it): which phase a slow run is in."""
    print(time.strftime("%H:%M:%S"), *what, file=sys.stderr, flush=True)


async def wait_for(check, timeout: float, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := await check():
            return result
        await asyncio.sleep(interval)
    return await check()


async def start_and_ask(browser, url: str):
    """The teacher's tab: start a class, ask from the Attention page, come back. Returns (page, code)."""
    context = await browser.new_context(viewport={"width": 1920, "height": 1080})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    await page.goto(f"{url}/class?present=1&lang=en", wait_until="domcontentloaded", timeout=WAIT_MS)
    await page.locator(".st-key-class_start button").click()
    code = (await page.locator(".class-code").inner_text(timeout=WAIT_MS)).strip()
    await page.locator(".stMainBlockContainer").get_by_role("link", name="Attention").click()
    await page.get_by_role("button", name="Ask the class").click()
    await page.locator(".st-key-class_ask_go_attention button").click()
    await page.get_by_role("link", name="Open the class view").click()
    await page.locator('[data-testid="stMetricValue"]').wait_for(timeout=WAIT_MS)
    return page, code


async def join(browser, url: str, code: str, i: int):
    """Student ``i``'s tab, joined with nickname s<i>, the question on screen (every other one in Korean)."""
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    record_reports(page, i)
    lang = "ko" if i % 2 else "en"
    try:
        await page.goto(f"{url}/class?code={code}&lang={lang}", wait_until="domcontentloaded", timeout=WAIT_MS)
        await page.locator(".st-key-class_join_name input").fill(f"s{i}")
        await page.locator(".st-key-class_join_go button").click()
        await page.locator(f".st-key-class_pick_{code}_1 button").first.wait_for(timeout=WAIT_MS)
    except Exception:
        await page.screenshot(path=str(SHOTS / f"class_failed_student_{i}.png"))
        raise
    return page


PAGE_NOTES: dict[int, list[str]] = {}  # student -> what the browser reported (errors, HTTP >= 400, closed sockets)
FRAMES: dict[int, list[float]] = {}  # student -> when the page sent a websocket frame (its poll, every 2 s)
RECEIVED: dict[int, list[tuple[str, int]]] = {}  # student -> (time, size) of each websocket frame received


def record_reports(page, i: int) -> None:
    """Record what student ``i``'s browser reports; read only for a screen the reveal missed."""
    notes = PAGE_NOTES.setdefault(i, [])
    page.on("console", lambda m: m.type in ("error", "warning") and notes.append(f"console {m.type}: {m.text[:300]}"))
    page.on("pageerror", lambda e: notes.append(f"page error: {str(e)[:300]}"))
    page.on("requestfailed", lambda r: notes.append(f"request failed: {r.url[-120:]} {r.failure}"))
    page.on("response", lambda r: r.status >= 400 and notes.append(f"{time.strftime('%X')} HTTP {r.status} {r.url}"))

    def socket(ws) -> None:
        ws.on("close", lambda _: notes.append(f"{time.strftime('%X')} websocket closed"))
        ws.on("framesent", lambda _: FRAMES.setdefault(i, []).append(time.time()))
        ws.on("framereceived", lambda f: RECEIVED.setdefault(i, []).append((time.strftime("%X"), len(f))))

    page.on("websocket", socket)


CHART_STATE = """() => ({
  charts: [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map(el => ({
    plot: !!el.querySelector('.js-plotly-plot'), visible: el.offsetParent !== null, height: el.offsetHeight})),
  main: [...document.querySelectorAll('.stMainBlockContainer [data-testid]')].map(e => e.dataset.testid)
    .filter(id => !id.startsWith('stMarkdown') && id !== 'stButtonGroup'),
  scripts: performance.getEntriesByType('resource').filter(r => /[.]js$/.test(r.name) && r.transferSize > 1e6)
    .map(r => ({name: r.name.slice(-60), size: r.transferSize, ms: Math.round(r.duration)}))})"""


async def missed_screen(page, i: int) -> dict:
    """What a screen the reveal did not reach holds: its chart elements and what the browser reported."""
    await page.screenshot(path=str(SHOTS / f"class_not_reached_{i}.png"), full_page=True)
    errors = await page.locator('[data-testid="stException"], [data-testid="stAlert"]').all_inner_texts()
    sent = FRAMES.get(i, [])
    return {"student": i, "page": await page.evaluate(CHART_STATE), "errors": errors, "notes": PAGE_NOTES.get(i, []),
            "frames_sent_last_30_s": sum(t > time.time() - 30 for t in sent),
            "frames_received_over_5kb": [f for f in RECEIVED.get(i, []) if f[1] > 5000]}  # fmt: skip


async def teacher_count(page) -> int:
    text = await page.locator('[data-testid="stMetricValue"]').first.inner_text()
    return int(text.strip() or 0)


async def run_class(url: str, pids: list[int]) -> dict:
    from playwright.async_api import async_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            teacher, code = await start_and_ask(browser, url)
            say("asked; class", code)
            await asyncio.sleep(3)
            cpu0, t0 = cpu_seconds(pids), time.monotonic()
            await asyncio.sleep(IDLE_S / 2)
            teacher_only = (cpu_seconds(pids) - cpu0) / (time.monotonic() - t0)
            students = []
            for batch in range(0, STUDENTS, JOINING):  # a few tabs at a time: a class does not arrive in one ms
                ids = range(batch, min(batch + JOINING, STUDENTS))
                students += await asyncio.gather(*(join(browser, url, code, i) for i in ids))
                say(len(students), "students joined")
            await asyncio.sleep(4)  # the last pages' first runs are over
            cpu1, t1 = cpu_seconds(pids), time.monotonic()
            await asyncio.sleep(IDLE_S)
            polling = (cpu_seconds(pids) - cpu1) / (time.monotonic() - t1)
            per_student = (polling - teacher_only) / STUDENTS
            options = await students[0].locator(f".st-key-class_pick_{code}_1 button").count()

            observed: list[tuple[float, int]] = []
            clicking = True

            async def watch():
                while clicking or not observed or observed[-1][1] < STUDENTS:
                    observed.append((time.time(), await teacher_count(teacher)))
                    if observed[-1][1] >= STUDENTS or time.time() - observed[0][0] > 120:
                        return
                    await asyncio.sleep(0.1)

            say("polling measured; clicking")
            watcher = asyncio.create_task(watch())
            clicks, chosen = [], []
            for i, page in enumerate(students):
                choice = (i * 7) % options
                clicks.append(time.time())
                await page.locator(f".st-key-class_pick_{code}_1 button").nth(choice).click()
                chosen.append(choice)
                await asyncio.sleep(0.4)
            load = load_average()
            clicking = False
            await watcher
            latencies = []
            for k, clicked in enumerate(sorted(clicks), start=1):
                seen = next((when for when, count in observed if count >= k), None)
                latencies.append(None if seen is None else max(0.0, seen - clicked))
            await students[0].screenshot(path=str(SHOTS / "class_student_answered.png"))
            await students[1].screenshot(path=str(SHOTS / "class_student_answered_ko.png"))
            await teacher.screenshot(path=str(SHOTS / "class_projector_count.png"))
            counted = observed[-1][1] if observed else 0

            say("counted", counted, "; revealing")
            revealed_at = time.time()
            await teacher.locator(".st-key-class_reveal button").click()
            try:
                await teacher.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=WAIT_MS)
            except Exception:
                await teacher.screenshot(path=str(SHOTS / "class_failed_reveal.png"), full_page=True)
                raise
            reached = await asyncio.gather(
                *(wait_for(lambda page=page: page.locator(DRAWN).count(), REVEAL_WAIT_S) for page in students)
            )
            reveal_s = time.time() - revealed_at
            missed = [await missed_screen(page, i) for i, (page, got) in enumerate(zip(students, reached)) if not got]
            await asyncio.sleep(1.5)
            await teacher.screenshot(path=str(SHOTS / "class_projector_reveal.png"), full_page=True)
            await students[0].screenshot(path=str(SHOTS / "class_student_reveal.png"))
            await students[1].screenshot(path=str(SHOTS / "class_student_reveal_ko.png"))
        finally:
            await browser.close()
    return {
        "code": code,
        "counted": counted,
        "chosen": chosen,
        "latencies_s": latencies,
        "reached": [bool(r) for r in reached],
        "missed_screens": missed,
        "reveal_reached_all_s": round(reveal_s, 2),
        "load_average_during_clicks": load,
        "server_cpu_per_s_teacher_only": round(teacher_only, 4),
        "server_cpu_per_s_with_students": round(polling, 4),
        "server_cpu_per_student": round(per_student, 5),
    }


def test_thirty_students_on_two_replicas_are_all_counted_and_all_see_the_reveal(classroom):
    url, pids, data = classroom
    result = asyncio.run(run_class(url, pids))
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "class_browser.json").write_text(json.dumps(result, indent=1))  # kept when an assertion fails
    from ui.classroom.store import open_store

    store = open_store(str(data / "classroom.sqlite3"))
    code = result["code"]
    secret_free = store.tally(code, 1)  # revealed: anyone may read it
    expected = [result["chosen"].count(c) for c in range(len(secret_free.counts))]
    assert result["counted"] == STUDENTS  # the projector counted every answer
    assert secret_free.answered == STUDENTS and secret_free.counts == expected
    assert sorted(n for names in secret_free.nicknames for n in names) == sorted(f"s{i}" for i in range(STUDENTS))
    assert all(result["reached"]), "the reveal did not reach every student's screen"
    assert all(v is not None for v in result["latencies_s"])
    latencies = result["latencies_s"]
    result |= {"p50_s": round(nearest_rank(latencies, 0.5), 2), "p95_s": round(nearest_rank(latencies, 0.95), 2),
               "students": STUDENTS, "replicas": 2, "poll_interval_s": 2.0, "cpus": os.cpu_count()}  # fmt: skip
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "class_browser.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k not in ("latencies_s", "chosen", "reached")}))
