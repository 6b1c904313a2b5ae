"""A real browser on every page in Korean, at a student's laptop size and a projector's, with screenshots.

The screenshots go to ``test-artifacts/korean-<page>-<width>x<height>.png`` for a person to look at
(Hangul needs Debian's ``fonts-noto-cjk``; ``scripts/test.sh`` installs it).
"""

from __future__ import annotations

import urllib.parse

from tests import browser_server
from tests.browser_server import ARTIFACTS, ROOT, launch, needs_chromium, settle
from ui.i18n import translate

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

PAGES = ["", *sorted(p.stem for p in (ROOT / "pages").glob("*.py") if p.stem != "start" and not p.stem.startswith("_"))]
SIZES = [(1366, 768), (1920, 1080)]


def nav_labels(page) -> list[str]:
    """The sidebar's page links (waited for: on a busy machine the sidebar can come after the page settles)."""
    links = page.locator(".st-key-app_nav").locator("a")
    links.first.wait_for(timeout=120_000)
    return links.all_inner_texts()


def test_every_page_in_korean_screenshots_at_laptop_and_projector_size(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for width, height in SIZES:
                page = browser.new_page(viewport={"width": width, "height": height}, locale="ko-KR")
                page.set_default_timeout(120_000)
                for path in PAGES:
                    page.goto(f"{server_url}/{path}?lang=ko", wait_until="domcontentloaded", timeout=180_000)
                    settle(page)
                    name = path or "start"
                    page.screenshot(path=str(ARTIFACTS / f"korean-{name}-{width}x{height}.png"), timeout=60_000)
                    assert not page.get_by_test_id("stException").count(), f"{name}: an error is shown"
                    labels = nav_labels(page)
                    assert translate("common.page_start", "ko") in " ".join(labels), labels
                    assert translate("common.page_attention", "ko") in " ".join(labels), labels
                page.close()
        finally:
            browser.close()


def test_language_switch_and_presenter_mode_in_a_browser(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 768}, locale="ko-KR")
            page.set_default_timeout(120_000)
            # No ?lang=: the browser's language (Korean) decides, and the address then keeps it.
            page.goto(server_url, wait_until="domcontentloaded", timeout=180_000)
            page.get_by_role("heading", name=translate("start.title", "ko")).wait_for(timeout=180_000)
            page.wait_for_function("() => window.location.search.includes('lang=ko')", timeout=60_000)
            page.get_by_test_id("stSidebarUserContent").get_by_text("English", exact=True).click()
            page.get_by_role("heading", name=translate("start.title", "en")).wait_for(timeout=60_000)
            page.wait_for_function("() => window.location.search.includes('lang=en')", timeout=60_000)
            # the navigation is redrawn by the same run, a moment after the heading on a loaded machine
            start_en = translate("common.page_start", "en")
            page.locator(".st-key-app_nav").get_by_text(start_en, exact=True).wait_for(timeout=60_000)
            assert start_en in " ".join(nav_labels(page))

            # Share: the address the browser sees, with the language, as text and as a QR code.
            page.get_by_role("button", name=translate("share.button", "en")).click()
            link = page.get_by_test_id("stPopoverBody").get_by_test_id("stCode").inner_text(timeout=60_000)
            assert link.startswith(server_url + "/") and "lang=en" in link, link
            qr = page.get_by_test_id("stPopoverBody").locator("img").first
            qr.wait_for(timeout=60_000)
            page.wait_for_function("(img) => img.complete && img.naturalWidth > 100", arg=qr.element_handle())
            page.keyboard.press("Escape")

            # The guided tour opens step 1 on its page and outlines that step's control.
            page.get_by_role("button", name=translate("start.tour_start", "en")).click()
            page.get_by_text(translate("tour.tokens_body", "en")[:40]).wait_for(timeout=120_000)
            page.wait_for_function("() => window.location.pathname.endsWith('/playground')", timeout=60_000)
            settle(page)
            outline = page.locator(".st-key-text").evaluate("e => getComputedStyle(e).outlineStyle")
            assert outline == "solid"
            page.screenshot(path=str(ARTIFACTS / "tour-step1-1366x768.png"), timeout=60_000)
            page.close()

            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            page.set_default_timeout(120_000)
            query = urllib.parse.urlencode({"lang": "ko", "present": "1", "layer": 2, "head": 3})
            page.goto(f"{server_url}/attention?{query}", wait_until="domcontentloaded", timeout=180_000)
            settle(page)
            page.screenshot(path=str(ARTIFACTS / "presenter-attention-1920x1080.png"), timeout=60_000)
            box = page.get_by_test_id("stSidebar").bounding_box()
            assert box is None or box["x"] + box["width"] <= 1, box  # the sidebar starts folded, off screen
            size = page.evaluate(
                "() => parseFloat(getComputedStyle(document.querySelector("
                "'.stMainBlockContainer [data-testid=stWidgetLabel] p')).fontSize)"
            )
            assert size >= 24
            page.close()
        finally:
            browser.close()
