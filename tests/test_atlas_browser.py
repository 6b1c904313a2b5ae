"""A real browser on the head atlas and the Generate page: clicking a head in the grid opens its heatmap;
screenshots of both pages in English and Korean at 1366x768 go to test-artifacts/ for a person to look at."""

from __future__ import annotations

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, settle
from ui.i18n import translate

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for


def heatmap_title(lang: str, layer: int, head: int) -> str:
    return translate("atlas.fig_head_title", lang, layer=layer, head=head, role="")[:-1].strip()


def wait_for_title(page, start: str) -> None:
    """Wait until a figure's title (plotly's SVG .gtitle, not the hover label) starts with ``start``."""
    script = "(s) => [...document.querySelectorAll('.gtitle')].some((e) => e.textContent.startsWith(s))"
    page.wait_for_function(script, arg=start, timeout=120_000)


def test_clicking_a_head_opens_its_heatmap_and_pages_render(server_url):
    with chromium_page() as page:
        page.goto(f"{server_url}/head_atlas?lang=en", wait_until="domcontentloaded", timeout=180_000)
        wait_for_title(page, heatmap_title("en", 1, 1))
        settle(page)  # the page has finished running: the grid is drawn where it stays
        grid = page.locator(".js-plotly-plot").first
        grid.scroll_into_view_if_needed()
        area = grid.locator(".nsewdrag").first.bounding_box()  # the plot area: 2 layers x 4 heads
        page.mouse.click(area["x"] + area["width"] * 2.5 / 4, area["y"] + area["height"] * 1.5 / 2)
        wait_for_title(page, heatmap_title("en", 2, 3))
        page.screenshot(path=str(ARTIFACTS / "atlas-click-1366x768.png"))
        for lang in ("en", "ko"):
            for name in ("generate", "head_atlas"):
                page.goto(f"{server_url}/{name}?lang={lang}", wait_until="domcontentloaded", timeout=180_000)
                settle(page)
                assert not page.get_by_test_id("stException").count(), f"{name} ({lang}): an error is shown"
                page.screenshot(path=str(ARTIFACTS / f"{name}-{lang}-1366x768.png"))
