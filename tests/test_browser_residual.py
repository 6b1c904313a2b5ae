"""A real browser on the Residual page: every view renders without an error in English and Korean at
1366x768 and in presenter mode at 1920x1080; clicking a head in the contributions heatmap opens its
attention row. Screenshots (the top of the page, then each figure scrolled into view) go to
test-artifacts/ for a person to look at."""

from __future__ import annotations

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, settle
from ui.i18n import translate

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for
VIEWS = {"lens": 2, "contributions": 2, "heads": 1, "compare": 3}  # view: figures it draws at least


def open_view(page, server_url: str, view: str, lang: str, extra: str = "") -> None:
    """The page on ``view`` with review-lm (2 layers x 4 heads: the clicks below aim at its grid; English
    sessions start on SmolLM2's 30 x 9)."""
    page.goto(f"{server_url}/residual?lang={lang}&rs_view={view}&rs_model=review-lm{extra}", wait_until="domcontentloaded",
              timeout=180_000)  # fmt: skip
    page.wait_for_function("(n) => document.querySelectorAll('.js-plotly-plot').length >= n", arg=VIEWS[view],
                           timeout=180_000)  # fmt: skip
    settle(page)
    assert not page.get_by_test_id("stException").count(), f"{view} ({lang}): an error is shown"


def shots(page, name: str) -> None:
    """The top of the page, then each figure scrolled into view."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
    charts = page.get_by_test_id("stPlotlyChart")
    for i in range(min(charts.count(), 3)):
        charts.nth(i).scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / f"{name}-figure{i + 1}.png"))


def test_every_view_renders_and_a_clicked_head_opens_its_row(server_url):
    with chromium_page() as page:
        for lang in ("en", "ko"):
            for view in VIEWS:
                open_view(page, server_url, view, lang)
                shots(page, f"residual-{view}-{lang}-1366x768")
        open_view(page, server_url, "contributions", "en")
        heads = page.get_by_test_id("stPlotlyChart").nth(1)
        heads.scroll_into_view_if_needed()
        area = heads.locator(".nsewdrag").first.bounding_box()  # 2 layers x 4 heads
        page.mouse.click(area["x"] + area["width"] * 2.5 / 4, area["y"] + area["height"] * 1.5 / 2)
        title = translate("residual.clicked_head", "en", layer=2, head=3, token="", position=0)[:16]
        script = "(s) => [...document.querySelectorAll('.gtitle')].some((e) => e.textContent.startsWith(s))"
        page.wait_for_function(script, arg=title, timeout=120_000)
        settle(page)
        page.get_by_test_id("stPlotlyChart").nth(2).scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "residual-click-1366x768.png"))
        wide = page.context.browser.new_page(viewport={"width": 1920, "height": 1080})
        wide.set_default_timeout(120_000)
        for view in VIEWS:
            open_view(wide, server_url, view, "en", "&present=1")
            shots(wide, f"residual-{view}-present-1920x1080")
