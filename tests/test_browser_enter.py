"""A real browser: pressing Enter in a sentence box runs it (the figure changes); Shift+Enter adds a line."""

from __future__ import annotations

import urllib.parse

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, poll, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

START = "the movie was great"
TYPED = "a terrible boring film"
# The heatmap's key labels (the tokens), joined: they change when the sentence the page runs changes.
HEATMAP_TOKENS = """() => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === 'attention-heatmap');
  return gd ? (gd.data[0].x || []).join(' ') : null;
}"""
HINT = """() => {
  const hint = document.querySelector('.stTextArea [data-testid="InputInstructions"]');
  return hint ? getComputedStyle(hint, '::before').content : null;
}"""


def test_enter_runs_the_sentence_box_and_shift_enter_adds_a_line(server_url):
    with chromium_page() as page:
        query = urllib.parse.urlencode({"text": START, "lang": "en"})
        page.goto(f"{server_url}/attention?{query}", wait_until="domcontentloaded", timeout=180_000)
        tokens = poll(page, HEATMAP_TOKENS, lambda x: bool(x) and "great" in x, timeout=180)
        assert "great" in tokens, tokens
        settle(page)
        box = page.get_by_test_id("stMain").locator(".stTextArea textarea").first
        box.fill(TYPED)
        assert "Shift+Enter" in (page.evaluate(HINT) or ""), "the box's hint does not say how to run it"
        box.press("Enter")
        tokens = poll(page, HEATMAP_TOKENS, lambda x: bool(x) and "terrible" in x, timeout=120)
        assert "terrible" in tokens, f"Enter did not run the box: the heatmap still shows {tokens!r}"
        assert box.input_value() == TYPED, "Enter added a line instead of running"
        box.press("End")
        box.press("Shift+Enter")
        assert box.input_value() == TYPED + "\n", "Shift+Enter did not start a new line"
        page.screenshot(path=str(ARTIFACTS / "enter-runs-attention.png"))
