"""A real browser on the Attention, Masks and Positional encoding pages at a laptop's 1366×768 and a
projector's 1920×1080: screenshots for a person to look at, and checks on the page's own elements.

Screenshots go to ``test-artifacts/layout-<page>-<width>x<height>.png``.
"""

from __future__ import annotations

import urllib.parse

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, launch, needs_chromium, poll, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

SENTENCE = "the movie was not good at all , the acting was bad"
PAGES = ["attention", "masks", "positional_encoding"]
SIZES = [(1366, 768), (1920, 1080)]
IDLE = """() => {
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  const spinner = document.querySelector('[data-testid="stSpinner"]');
  return document.querySelector('h1') !== null && !status && !spinner
    && document.querySelectorAll('.js-plotly-plot').length > 0;
}"""
FIGURE = """(meta) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === meta);
  if (!gd) return null;
  const box = gd.getBoundingClientRect();
  return {top: box.top + window.scrollY, bottom: box.bottom + window.scrollY, left: box.left, right: box.right,
          title: gd.layout.title && gd.layout.title.text};
}"""
# Page coordinates of the centre of thumbnail (layer, head), from the grid's own click-target trace.
THUMB = """([layer, head]) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === 'attention-grid');
  const trace = gd._fullData[gd._fullData.length - 1];
  const i = trace.customdata.findIndex(c => c[0] === layer && c[1] === head);
  const xa = gd._fullLayout[trace.xaxis.replace('x', 'xaxis')], ya = gd._fullLayout[trace.yaxis.replace('y', 'yaxis')];
  const box = gd.getBoundingClientRect();
  return {x: box.left + xa._offset + xa.l2p(trace.x[i]), y: box.top + ya._offset + ya.l2p(trace.y[i])};
}"""


def wait_for_title(page, meta: str, text: str, timeout: float = 120) -> dict:
    return poll(page, FIGURE, lambda box: bool(box and text in (box["title"] or "")), timeout, arg=meta) or {}


def visible_box(page, locator) -> dict:
    box = locator.bounding_box()
    assert box is not None, "element not drawn"
    return {"top": box["y"] + page.evaluate("window.scrollY"), "bottom": box["y"] + box["height"]}


def test_pages_at_laptop_and_projector_size(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    query = urllib.parse.urlencode({"text": SENTENCE})
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for width, height in SIZES:
                page = browser.new_page(viewport={"width": width, "height": height})
                page.set_default_timeout(120_000)
                for name in PAGES:
                    page.goto(f"{server_url}/{name}?{query}", wait_until="domcontentloaded", timeout=180_000)
                    settle(page, IDLE)
                    page.screenshot(path=str(ARTIFACTS / f"layout-{name}-{width}x{height}.png"), timeout=60_000)
                    assert not page.get_by_test_id("stException").count(), f"{name}: an error is shown"
                    if name == "attention" and (width, height) == (1366, 768):
                        check_attention_first_screen(page, height)
                    full_length_screenshot(page, name, width, height)
                page.close()
        finally:
            browser.close()


def full_length_screenshot(page, name: str, width: int, height: int) -> None:
    """The whole page (Streamlit scrolls inside its main block, so the window is made tall for it)."""
    page.set_viewport_size({"width": width, "height": 4000})
    settle(page, IDLE)
    page.screenshot(path=str(ARTIFACTS / f"layout-{name}-{width}x{height}-full.png"), timeout=60_000)
    page.set_viewport_size({"width": width, "height": height})


def check_attention_first_screen(page, height: int) -> None:
    """The heatmap and its layer and head boxes start within the first screen, without scrolling."""
    heatmap = page.evaluate(FIGURE, "attention-heatmap")
    assert heatmap, "no heatmap"
    assert heatmap["top"] < height - 150, f"the heatmap starts at {heatmap['top']:.0f} px of a {height} px screen"
    main = page.get_by_test_id("stMain")
    for label in ("Layer", "Head"):
        box = visible_box(page, main.get_by_text(label, exact=True).first)
        assert box["bottom"] < height, f"{label} box ends at {box['bottom']:.0f} px"


def test_clicking_a_thumbnail_opens_that_head(server_url):
    query = urllib.parse.urlencode({"text": SENTENCE})
    with chromium_page(1920, 1080, failure_shot="layout-click-failure.png") as page:
        page.goto(f"{server_url}/attention?{query}", wait_until="domcontentloaded", timeout=180_000)
        settle(page, IDLE)
        assert "Layer 1, head 1" in wait_for_title(page, "attention-heatmap", "Layer 1, head 1")["title"]
        target = page.evaluate(THUMB, [1, 2])  # layer 2, head 3 (0-based)
        page.mouse.click(target["x"], target["y"])
        box = wait_for_title(page, "attention-heatmap", "Layer 2, head 3")
        assert "Layer 2, head 3" in (box.get("title") or ""), box
        settle(page, IDLE)
        url = urllib.parse.urlparse(page.evaluate("window.location.href"))
        params = urllib.parse.parse_qs(url.query)
        assert params.get("layer") == ["2"] and params.get("head") == ["3"], params
