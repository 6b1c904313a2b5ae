"""A real browser switches pages and types many times in a row: no typed text is ever lost.

Each round opens the other page from the navigation, types into the sentence box as soon as it
shows the previous round's text (not waiting for the page's results), runs it, and checks that
the box and the address keep the new text and that the next page starts from it.
"""

from __future__ import annotations

import time
import urllib.parse

from tests.browser_server import ARTIFACTS, launch, needs_chromium, server_url  # noqa: F401

pytestmark = needs_chromium

ROUNDS = 12
PAGES = ("Attention", "Playground")
BOX = "Sentences — one per line"
WAIT_MS = 240_000  # a machine shared with training runs can be slow to answer


def address_text(page) -> str | None:
    query = urllib.parse.urlparse(page.evaluate("window.location.href")).query
    return (urllib.parse.parse_qs(query).get("text") or [None])[0]


def wait_for_address(page, text: str, timeout_s: float = WAIT_MS / 1000) -> str | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and address_text(page) != text:
        time.sleep(0.25)
    return address_text(page)


def test_switching_pages_and_typing_never_loses_text(server_url):
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.set_default_timeout(WAIT_MS)
        try:
            first = "round start , the film was good"
            page.goto(f"{server_url}/playground?text={urllib.parse.quote(first)}", timeout=WAIT_MS)
            expect(page.get_by_role("textbox", name=BOX)).to_have_value(first, timeout=WAIT_MS)
            last = first
            for i in range(ROUNDS):
                name = PAGES[i % len(PAGES)]
                page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()
                box = page.get_by_role("textbox", name=BOX)
                expect(box).to_have_value(last, timeout=WAIT_MS)  # the next page shows what was typed
                typed = f"round {i} on {name.lower()} : the acting was great but the plot was not"
                box.fill(typed)
                box.press("Control+Enter")
                expect(box).to_have_value(typed, timeout=WAIT_MS)
                assert wait_for_address(page, typed) == typed, f"round {i}: the address lost the typed text"
                expect(box).to_have_value(typed, timeout=5_000)  # and the box did not revert afterwards
                last = typed
        except Exception:
            try:
                page.screenshot(path=str(ARTIFACTS / "test_browser_typing_failure.png"), timeout=20_000)
            except Exception as err:  # noqa: BLE001
                print(f"no screenshot: {err}")
            raise
        finally:
            browser.close()
