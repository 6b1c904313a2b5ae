"""The pieces of the 30-student browser test (tests/test_class_browser.py): the classroom server it runs
(scripts/classroom_server.sh itself: two replicas, nginx, the supervisor), the teacher's and the students'
tabs, and what a tab records about itself."""

from __future__ import annotations

import asyncio
import math
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.browser_server import ROOT
from tests.test_classroom_config import SCRIPT, two_free_ports
from ui.classroom.reveal_html import ROOT_CLASS
from ui.classroom.student import REVEAL_KEY
from ui.classroom.teacher import REVEAL_KEY as PROJECTOR_REVEAL_KEY

SHOTS = Path(os.environ.get("ATTENTION_LAB_SHOTS", "/tmp/shots"))
WAIT_MS = 300_000
TEACHER_REVEAL = f".st-key-{PROJECTOR_REVEAL_KEY} .{ROOT_CLASS}"  # the projector's reveal: the same HTML
STUDENT_REVEAL = f".st-key-{REVEAL_KEY} .{ROOT_CLASS}"  # a student's reveal: HTML (ui/classroom/reveal_html.py)
ACTIVE = 'button[aria-checked="true"]'  # a selected answer button (pills are radio buttons)
HOSTILE = "![x](http://127.0.0.1:9/x.png)<script>al"  # 40 characters: a link, an image, a tag


class Classroom:
    """scripts/classroom_server.sh with two replicas on free ports; its output is kept in ``lines``."""

    def __init__(self, tmp: Path) -> None:
        first, listen = two_free_ports(), two_free_ports()
        while listen in (first, first + 1):
            listen = two_free_ports()
        self.data, self.url, self.first = tmp / "data", f"http://127.0.0.1:{listen}", first
        env = {**os.environ, "ATTENTION_LAB_DATA": str(self.data), "TMPDIR": str(tmp), "PYTHON": sys.executable}
        args = ["bash", str(SCRIPT), "-n", "2", "-p", str(listen), "-f", str(first)]
        self.script = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, bufsize=1)  # fmt: skip
        os.set_blocking(self.script.stdout.fileno(), False)
        self.lines: list[str] = []
        self.folder = Path(self.wait_for_line("run folder:", 300).split("run folder:")[1].split()[0])

    def read(self) -> None:
        while line := self.script.stdout.readline():
            self.lines.append(line)

    def wait_for_line(self, needle: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read()
            if found := next((line for line in self.lines if needle in line), None):
                return found
            if self.script.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {needle!r} from the classroom script: {''.join(self.lines)}")

    def pids(self) -> list[int]:
        """The replicas' process ids (nginx's is the file's last line)."""
        return [int(p) for p in (self.folder / "pids").read_text().split()][:-1]

    def stop(self) -> None:
        self.script.terminate()
        try:
            self.script.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.script.kill()
        self.read()

    def answers(self, code: str, number: int) -> int:
        with sqlite3.connect(self.data / "classroom.sqlite3") as db:
            row = db.execute("SELECT COUNT(*) FROM class_answers WHERE code = ? AND number = ?", (code, number))
            return row.fetchone()[0]

    def asked(self, code: str, number: int) -> bool:
        with sqlite3.connect(self.data / "classroom.sqlite3") as db:
            row = db.execute("SELECT 1 FROM class_questions WHERE code = ? AND number = ?", (code, number))
            return row.fetchone() is not None

    def answer_by(self, code: str, number: int, student: str) -> int | None:
        with sqlite3.connect(self.data / "classroom.sqlite3") as db:
            sql = "SELECT choice FROM class_answers WHERE code = ? AND number = ? AND student = ?"
            row = db.execute(sql, (code, number, student)).fetchone()
            return None if row is None else row[0]

    def answer_of(self, code: str, number: int) -> int:
        """The model's answer to question ``number`` (read from the store's file, as no screen may)."""
        with sqlite3.connect(self.data / "classroom.sqlite3") as db:
            row = db.execute("SELECT answer FROM class_questions WHERE code = ? AND number = ?", (code, number))
            return row.fetchone()[0]


def nearest_rank(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def spread(seconds: list[float | None]) -> dict:
    """p50 / p95 / max of the times that arrived, and how many did not."""
    got = [s for s in seconds if s is not None]
    if not got:
        return {"reached": 0, "of": len(seconds)}
    return {"reached": len(got), "of": len(seconds), "p50_s": round(nearest_rank(got, 0.5), 2),
            "p95_s": round(nearest_rank(got, 0.95), 2), "max_s": round(max(got), 2)}  # fmt: skip


def say(*what) -> None:
    """Progress on stderr (pytest -s shows it): which phase a slow run is in."""
    print(time.strftime("%H:%M:%S"), *what, file=sys.stderr, flush=True)


# Resolves with the page's clock (seconds since the epoch, the same clock as time.time() on this machine) at the
# first DOM change after which an element matching the CSS selector (and holding one of the texts, if any) is laid
# out; null after the timeout. Watching from inside the page costs the tab nothing until its DOM changes, where
# asking each of 30 tabs every 0.25 s (a DevTools round trip each) took CPU from the tabs being timed.
SHOWN_AT_JS = """([css, texts, timeoutMs]) => new Promise((resolve) => {
  const shown = () => [...document.querySelectorAll(css)].some((e) => e.getClientRects().length > 0
    && (texts.length === 0 || texts.some((t) => e.textContent.includes(t))));
  if (shown()) { resolve(Date.now() / 1000); return; }
  const watch = new MutationObserver(() => {
    if (shown()) { watch.disconnect(); clearTimeout(timer); resolve(Date.now() / 1000); }
  });
  const timer = setTimeout(() => { watch.disconnect(); resolve(null); }, timeoutMs);
  watch.observe(document, { subtree: true, childList: true, characterData: true });
})"""


async def reached(page, selector: str, since: float, timeout: float, texts: tuple[str, ...] = ()) -> float | None:
    """Seconds from ``since`` until an element matching the CSS ``selector`` (holding one of ``texts``, if given)
    is on ``page``, by the page's own clock; None after ``timeout``. A page that loads a new document meanwhile
    (a reload) is looked at every 0.25 s for the rest of the time."""
    try:
        shown = await page.evaluate(SHOWN_AT_JS, [selector, list(texts), int(timeout * 1000)])
        return None if shown is None else max(0.0, shown - since)
    except Exception:  # noqa: BLE001 - the document changed under the watch
        pass
    deadline, found = since + timeout, page.locator(f"{selector}:visible")
    if texts:
        found = found.filter(has_text=re.compile("|".join(map(re.escape, texts))))
    while time.time() < deadline:
        try:
            if await found.count():
                return time.time() - since
        except Exception:  # noqa: BLE001 - a page between two documents: look again
            pass
        await asyncio.sleep(0.25)
    return None


TEACHER_READS_S = 2.0  # the teacher reads the question in the popover before asking it


async def ask(page, read_s: float = TEACHER_READS_S) -> None:
    """The teacher asks from the Attention page (the token it offers first) and comes back to the class: as a
    teacher does, once the page has drawn its heatmap and after ``read_s`` seconds reading the question (0: at
    once, the Attention page perhaps still drawing in this browser while the question reaches the students)."""
    await page.locator(".stMainBlockContainer").get_by_role("link", name="Attention").click()
    if read_s:
        await page.locator('.stMainBlockContainer [data-testid="stPlotlyChart"] .main-svg').first.wait_for()
    await page.get_by_role("button", name="Ask the class").click()
    await asyncio.sleep(read_s)
    await page.locator(".st-key-class_ask_go_attention button").click()
    await page.get_by_role("link", name="Open the class view").click()
    await page.locator('[data-testid="stMetricValue"]').wait_for(timeout=WAIT_MS)


async def start_and_ask(browser, url: str):
    """The teacher's tab: start a class, keep its key, ask, come back. Returns (page, code, key)."""
    context = await browser.new_context(viewport={"width": 1920, "height": 1080})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    await page.goto(f"{url}/class?present=1&lang=en", wait_until="domcontentloaded", timeout=WAIT_MS)
    await page.locator(".st-key-class_start button").click()
    code = (await page.locator(".class-code").inner_text(timeout=WAIT_MS)).strip()
    await page.get_by_text("Teacher key (to take this class back").click()
    key = await page.locator('[data-testid="stExpanderDetails"] [data-testid="stCode"] code').inner_text()
    await ask(page)
    return page, code, key.strip()


async def resume(page, url: str, code: str, key: str) -> None:
    """A teacher whose replica restarted has a new browser session: the Resume form takes the class back."""
    await page.goto(f"{url}/class?present=1&lang=en", wait_until="domcontentloaded", timeout=WAIT_MS)
    await page.get_by_text("Take back a class").click()
    await page.locator(".st-key-class_resume_code input").fill(code)
    await page.locator(".st-key-class_resume_key input").fill(key)
    await page.locator(".st-key-class_resume_go button").click()
    await page.locator('[data-testid="stMetricValue"]').wait_for(timeout=WAIT_MS)


def nickname(i: int) -> str:
    return HOSTILE if i == 0 else f"s{i}"


async def join(browser, url: str, code: str, i: int):
    """Student ``i``'s tab, joined (every other one in Korean; student 0 with a hostile nickname; student 2 first
    pastes one over the limit and is told so). Returns (page, what the overlong nickname was told or None)."""
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    record_reports(page, i)
    lang = "ko" if i % 2 else "en"
    told = None
    try:
        await page.goto(f"{url}/class?code={code}&lang={lang}", wait_until="domcontentloaded", timeout=WAIT_MS)
        name = page.locator(".st-key-class_join_name input")
        if i == 2:
            await name.fill("n" * 60)
            await page.locator(".st-key-class_join_go button").click()
            told = await page.locator('[data-testid="stAlertContentError"]').first.inner_text(timeout=WAIT_MS)
        await name.fill(nickname(i))
        await page.locator(".st-key-class_join_go button").click()
        await page.locator(f".st-key-class_pick_{code}_1 button").first.wait_for(timeout=WAIT_MS)
    except Exception:
        await page.screenshot(path=str(SHOTS / f"class_failed_student_{i}.png"))
        raise
    return page, told


PAGE_NOTES: dict[int, list[str]] = {}  # student -> what the browser reported (errors, HTTP >= 400, closed sockets)


def record_reports(page, i: int) -> None:
    """Record what student ``i``'s browser reports; read only for a screen the reveal missed."""
    notes = PAGE_NOTES.setdefault(i, [])
    page.on("console", lambda m: m.type == "error" and notes.append(f"console error: {m.text[:300]}"))
    page.on("pageerror", lambda e: notes.append(f"page error: {str(e)[:300]}"))
    page.on("response", lambda r: r.status >= 400 and notes.append(f"{time.strftime('%X')} HTTP {r.status} {r.url}"))
    page.on("websocket", lambda ws: ws.on("close", lambda _: notes.append(f"{time.strftime('%X')} websocket closed")))


async def missed_screen(page, i: int, what: str) -> dict:
    """What a screen a change did not reach holds."""
    await page.screenshot(path=str(SHOTS / f"class_not_reached_{what}_{i}.png"), full_page=True)
    text = await page.locator(".stMainBlockContainer").inner_text()
    return {"student": i, "what": what, "text": text[-600:], "notes": PAGE_NOTES.get(i, [])[-10:]}


async def main_text(page) -> str:
    return await page.locator(".stMainBlockContainer").inner_text()


async def main_thread_s(cdp) -> float:
    """Seconds a tab's main thread has been busy (Chromium's TaskDuration; ``cdp`` a session with Performance on)."""
    metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "TaskDuration")


def browser_cpu() -> float:
    """CPU seconds (user + system) of every Chromium process on the machine: the browser's share of a change."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and "chrom" in (entry / "comm").read_text():
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except OSError:
            continue
    return total / tick
