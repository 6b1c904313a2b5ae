"""A real browser on the rotary section of the Positional encoding page at a laptop's 1366×768, in English
and Korean: screenshots for a person to look at, and checks on what plotly drew.

Screenshots go to ``test-artifacts/rotary-<lang>-<part>-1366x768.png`` (part: the plane, the score map).
"""

from __future__ import annotations

import urllib.parse

from tests import browser_server
from tests.browser_server import ARTIFACTS, launch, needs_chromium, poll, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

WIDTH, HEIGHT = 1366, 768
HEADERS = {"en": "Rotary positions (RoPE)", "ko": "회전 위치 임베딩(RoPE)"}
PLANE = {"en": "Pair 0, dimensions 0 and 32", "ko": "쌍 0, 차원 0과 32"}  # the plane's title
# What plotly drew for the figure whose layout.meta is ``meta``: its box in the window, title, font sizes.
DRAWN = """(meta) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === meta);
  if (!gd || !gd._fullLayout) return null;
  const box = gd.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, left: box.left, right: box.right, title: gd._fullLayout.title.text,
          font: gd._fullLayout.font.size, tick: gd._fullLayout.xaxis.tickfont.size, traces: gd.data.length};
}"""


def drawn(page, meta: str) -> dict:
    return poll(page, DRAWN, lambda box: bool(box and box["traces"]), 120, arg=meta) or {}


def test_rotary_section_at_laptop_size(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.set_default_timeout(120_000)
            for lang, header in HEADERS.items():
                query = urllib.parse.urlencode({"text": "the cat sat on the mat", "lang": lang})
                page.goto(f"{server_url}/positional_encoding?{query}", wait_until="domcontentloaded", timeout=180_000)
                settle(page)
                assert not page.get_by_test_id("stException").count(), f"{lang}: an error is shown"
                page.get_by_role("heading", name=header).scroll_into_view_if_needed()
                assert drawn(page, "rope-plane"), f"{lang}: the rotary plane was not drawn"
                page.locator(".js-plotly-plot").filter(has_text=PLANE[lang]).first.scroll_into_view_if_needed()
                plane = drawn(page, "rope-plane")
                assert 0 <= plane["top"] and plane["bottom"] <= HEIGHT + 1, (
                    f"{lang}: the plane is not on the screen: {plane}"
                )
                page.screenshot(path=str(ARTIFACTS / f"rotary-{lang}-plane-{WIDTH}x{HEIGHT}.png"), timeout=60_000)
                assert plane["font"] >= 16 and plane["tick"] >= 16
                assert plane["right"] <= WIDTH, f"{lang}: the plane runs off the screen: {plane}"
                scores = page.locator(".js-plotly-plot").filter(has_text=scores_title(lang)).first
                scores.scroll_into_view_if_needed()
                heat, line = drawn(page, "rope-scores"), drawn(page, "rope-distance")
                assert heat["traces"] == 2 and line["traces"] == 3
                assert heat["right"] <= line["left"] + 1, "the map and the line stand side by side"
                assert 0 <= heat["top"] and heat["bottom"] <= HEIGHT + 1, (
                    f"{lang}: the map is not on the screen: {heat}"
                )
                page.screenshot(path=str(ARTIFACTS / f"rotary-{lang}-scores-{WIDTH}x{HEIGHT}.png"), timeout=60_000)
        finally:
            browser.close()


def scores_title(lang: str) -> str:
    return {"en": "Score q·k of the rotated", "ko": "회전한 쿼리와 키의 점수"}[lang]
