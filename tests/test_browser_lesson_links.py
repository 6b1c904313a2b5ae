"""Real browser at 1366×768: a lesson link on the Start page lands on its step's control, without the tour.

Step 7 ("switch heads off") opens the Classifier page, whose heads-off boxes sit far below its top; after
following the link they must be on the screen. Screenshots: ``test-artifacts/lesson-link-<lang>-7.png``.
"""

from __future__ import annotations

import time

from tests import browser_server
from tests.browser_server import ARTIFACTS, launch, needs_chromium, poll, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

CONTROL = """() => {
  const el = document.querySelector('.st-key-classifier_off_0');
  if (!el) return null;
  const box = el.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, height: window.innerHeight};
}"""


def in_view(box) -> bool:
    return bool(box) and box["top"] >= 0 and box["bottom"] <= box["height"]


def test_the_heads_off_link_lands_on_the_heads_off_boxes(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for lang in ("en", "ko"):
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                page.set_default_timeout(240_000)
                page.goto(f"{server_url}/?lang={lang}", wait_until="domcontentloaded", timeout=180_000)
                settle(page)
                page.locator(".st-key-start_step_7 a").click()
                poll(page, CONTROL, bool, timeout=240)
                settle(page)
                time.sleep(2)  # figures drawn after the last run may push the control; the page brings it back
                page.screenshot(path=str(ARTIFACTS / f"lesson-link-{lang}-7.png"))
                box = page.evaluate(CONTROL)
                assert in_view(box), f"{lang}: the heads-off boxes are at {box} after following the link"
                assert "lesson=" not in page.url, "the step number stays in the address"
                page.close()
        finally:
            browser.close()
