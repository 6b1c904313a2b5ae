"""A real browser on the Similarity page (English and Korean) and on the head atlas of the real encoder
(all-minilm-l6-v2): no error, the figures drawn; screenshots at 1366x768 go to test-artifacts/ for a
person to look at."""

from __future__ import annotations

import pytest

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, settle
from ui.i18n import translate

from .test_browser_first_screen import TOP
from .test_similarity import BUNDLED

pytestmark = [
    needs_chromium,
    pytest.mark.skipif(not (BUNDLED / "model.safetensors").is_file(), reason="all-minilm-l6-v2 is not bundled"),
]
server_url = browser_server.server_url  # the fixture, under the name the tests ask for
FIRST_SCREEN_TOP = 468  # 300 px of the matrix show on a 768-px screen
TITLES = "(s) => [...document.querySelectorAll('.gtitle')].map((e) => e.textContent)"


def titles(page) -> list[str]:
    return page.evaluate(TITLES)


def test_similarity_page_and_the_atlas_of_the_real_encoder(server_url):
    with chromium_page() as page:
        for lang in ("en", "ko"):
            page.goto(f"{server_url}/similarity?lang={lang}", wait_until="domcontentloaded", timeout=180_000)
            matrix_title = translate("similarity.fig_matrix_title", lang, count=5)
            page.wait_for_function(f"() => {TITLES}().includes({matrix_title!r})", timeout=180_000)
            settle(page)
            assert not page.get_by_test_id("stException").count(), f"similarity ({lang}): an error is shown"
            assert translate("similarity.fig_tokens_title", lang, a=1, b=2) in titles(page)
            top = page.evaluate(TOP, "similarity-matrix")  # the matrix on the first screen (issue 50, item 6)
            assert top is not None and top <= FIRST_SCREEN_TOP, f"similarity ({lang}): the matrix starts at {top} px"
            page.screenshot(path=str(ARTIFACTS / f"similarity-{lang}-1366x768.png"))
            for number, part in enumerate(("matrix", "tokens")):
                page.locator(".js-plotly-plot").nth(number).scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"similarity-{lang}-{part}-1366x768.png"))
        page.goto(f"{server_url}/head_atlas?lang=en", wait_until="domcontentloaded", timeout=180_000)
        settle(page)
        page.locator(".st-key-atlas_model").click()
        page.keyboard.type("all-minilm")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot .heatmaplayer text')].length >= 72",
            timeout=180_000,
        )
        settle(page)
        assert not page.get_by_test_id("stException").count(), "head atlas: an error is shown"
        cells = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')][0].data[0].text.flat()")
        assert len(cells) == 72  # 6 layers x 12 heads
        # 12 heads: short role names fit the cells (layer 1 head 3, layer 2 head 9)
        assert cells[2] == "prev<br>1.00" and cells[12 + 8] == "next<br>0.65"
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "atlas-all-minilm-l6-v2-1366x768.png"))
