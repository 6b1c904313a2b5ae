"""A real browser against the app: start streamlit on a free port, launch Debian's chromium.

Browser test files import ``server_url`` (a pytest fixture) and ``launch`` from here.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from bench.load_server import start_server, wait_healthy
from ui.classroom.store import DATA_ENV

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving_app():
    """The app served on a free local port, one thread, with a data folder of its own (a class a browser test
    starts is not written to the repository's data/): yields (url, server process) once healthy; stops it after."""
    port = free_port()
    data = tempfile.TemporaryDirectory(prefix="attention-lab-browser-data-")
    server = start_server(port, ROOT, {DATA_ENV: data.name})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, 180, server)
        yield url, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        data.cleanup()


@pytest.fixture
def server_url():
    with serving_app() as (url, _):
        yield url


needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")


def launch(playwright):
    """Debian's chromium, headless, with the flags this offline machine needs."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)


@contextlib.contextmanager
def chromium_page(
    width: int = 1366,
    height: int = 768,
    timeout_ms: int | None = 120_000,
    failure_shot: str | None = None,
    **options,
):
    """A page of a launched chromium at ``width`` x ``height`` (``options``: more of ``new_page``'s, e.g.
    ``locale``) whose waits default to ``timeout_ms`` (None: playwright's own); the browser closes after,
    and ``failure_shot`` names the screenshot (in ARTIFACTS) kept when the block fails. Another page of
    the same browser: ``page.context.browser.new_page(...)``."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": width, "height": height}, **options)
            if timeout_ms is not None:
                page.set_default_timeout(timeout_ms)
            try:
                yield page
            except Exception:
                if failure_shot is not None:
                    page.screenshot(path=str(ARTIFACTS / failure_shot), timeout=20_000)
                raise
        finally:
            browser.close()


def poll(page, script: str, ready, timeout: float = 300, interval: float = 0.5, arg=None):
    """Evaluate ``script`` (given ``arg``) in ``page`` until ``ready(result)`` holds; returns the last result."""
    deadline = time.monotonic() + timeout
    result = None
    while time.monotonic() < deadline:
        result = page.evaluate(script, arg)
        if ready(result):
            return result
        time.sleep(interval)
    return result


IDLE = """() => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  const spinner = document.querySelector('[data-testid="stSpinner"]');
  return document.querySelector('h1') !== null && !status && !spinner;
}"""


def settle(page, idle: str = IDLE, timeout: float = 240) -> None:
    """Wait until ``idle`` (default: a title shown, Streamlit not running) has held 2 s in a row,
    so that figures drawn after the last run have landed."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline and quiet < 4:
        quiet = quiet + 1 if page.evaluate(idle) else 0
        time.sleep(0.5)


def ask_from_attention(page) -> None:
    """A teacher screen with a class started (English): ask the class from the Attention page's first offer and
    come back to the class view, where the reveal button waits."""
    page.locator(".stMainBlockContainer").get_by_role("link", name="Attention").click()
    page.get_by_role("button", name="Ask the class").click()
    page.locator(".st-key-class_ask_go_attention button").click()
    page.get_by_role("link", name="Open the class view").click()
    page.locator(".st-key-class_reveal button").wait_for()
