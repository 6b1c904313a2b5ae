"""A real browser on the Attention page with SmolLM2 (issue 60): layer 19 head 7 on a sentence written twice
(its induction stripe), layer 17 head 1 as typed (a previous-token head's diagonal), the look-ahead mask
drawn grey; English and Korean at 1366x768 and the presenter view at 1920x1080. Screenshots go to
test-artifacts/ for a person to look at; skipped without chromium or SmolLM2's file."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, settle
from ui.i18n import translate

ROOT = Path(__file__).resolve().parent.parent
HAS_SMOLLM2 = any((ROOT / "assets" / "models" / "smollm2-135m-instruct").glob("*.gguf"))
pytestmark = [needs_chromium, pytest.mark.skipif(not HAS_SMOLLM2, reason="SmolLM2's GGUF file is not here")]
server_url = browser_server.server_url  # the fixture, under the name the tests ask for
TEXT = "The cat sat on the mat because it was tired."
# (file name, language, width, height, presenter, repeat, layer, head)
VIEWS = [
    ("induction-en-1366x768", "en", 1366, 768, False, "repeat_twice", 19, 7),
    ("induction-ko-1366x768", "ko", 1366, 768, False, "repeat_twice", 19, 7),
    ("induction-en-present-1920x1080", "en", 1920, 1080, True, "repeat_twice", 19, 7),
    ("previous-en-1366x768", "en", 1366, 768, False, "repeat_off", 17, 1),
]


def address(url: str, lang: str, presenter: bool, repeat: str, layer: int, head: int) -> str:
    query = {"lang": lang, "model": "smollm2-135m-instruct", "text": TEXT, "layer": layer, "head": head}
    query["repeat"] = translate(f"attention.{repeat}", lang)  # the control keeps its shown label in the address
    return f"{url}/attention?{urlencode(query | ({'present': 1} if presenter else {}))}"


def test_smollm2_heads_masked_and_readable(server_url):
    with chromium_page(failure_shot="attention-lm-failed.png") as page:  # one browser, resized for each view
        for name, lang, width, height, presenter, repeat, layer, head in VIEWS:
            page.set_viewport_size({"width": width, "height": height})
            page.goto(address(server_url, lang, presenter, repeat, layer, head), wait_until="domcontentloaded")
            title = translate("attention.title_head", lang, layer=layer, head=head)
            script = "(s) => [...document.querySelectorAll('.gtitle')].some((e) => e.textContent === s)"
            page.wait_for_function(script, arg=title, timeout=240_000)
            settle(page)
            assert not page.get_by_test_id("stException").count(), f"{name}: an error is shown"
            body = page.inner_text("body")
            assert translate("attention.masked_caption", lang)[:20] in body
            if repeat == "repeat_twice":
                assert f"L{layer} H{head}" in body  # the induction note beside the control
            page.screenshot(path=str(ARTIFACTS / f"attention-lm-{name}.png"))
            heatmap = page.locator(".js-plotly-plot").first  # whole, where the second copy's stripe is
            heatmap.scroll_into_view_if_needed()
            heatmap.screenshot(path=str(ARTIFACTS / f"attention-lm-{name}-heatmap.png"))
