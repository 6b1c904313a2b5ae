"""One real-browser test: the app served by streamlit, driven by Debian's chromium through playwright.

It starts the server itself on a free port, so the first request the server sees is a shared link
straight to the Attention page (the case a teacher's link hits on a fresh server).
"""

from __future__ import annotations

import urllib.parse

from tests import browser_server
from tests.browser_server import ARTIFACTS, ROOT, launch, needs_chromium, poll
from transformer import analyze, load_model
from ui.figures.common import token_labels

MODEL = ROOT / "assets" / "models" / "imdb-sentiment"

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for


def expected_labels(text: str) -> list[str]:
    """The heatmap's row labels for ``text`` at the app's default maximum length."""
    result = analyze(load_model(MODEL), [text])
    return token_labels(result.tokens[0])


HEATMAP_DATA = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const gd = plots.find(p => p.layout && p.layout.meta === 'attention-heatmap');
  return gd ? {title: gd.layout.title.text, y: Array.from(gd.data[0].y), x: Array.from(gd.data[0].x)} : null;
}"""


def heatmap(page, labels: list[str], timeout: float = 300) -> dict:
    """Wait until the attention heatmap shows ``labels`` as rows; returns its title and labels."""
    return poll(page, HEATMAP_DATA, lambda d: bool(d and d["y"] == labels), timeout) or {}


def save_screenshot(page) -> None:
    """Best effort: a busy machine can make the screenshot itself time out; the test's own error matters more."""
    try:
        page.screenshot(path=str(ARTIFACTS / "test_browser_failure.png"), timeout=20_000)
    except Exception as err:  # noqa: BLE001
        print(f"no screenshot: {err}")


def test_type_on_playground_then_see_its_attention(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    shared = "Not bad at all , the film was good"
    second = "The plot was boring but the acting was great"
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        page.set_default_timeout(120_000)
        try:
            # A shared link is the server's very first request: it must still get the sidebar and the view.
            query = urllib.parse.urlencode({"text": shared, "layer": 2, "head": 3})
            # generous waits: a machine shared with training runs can take minutes to import torch
            page.goto(f"{server_url}/attention?{query}", wait_until="domcontentloaded", timeout=180_000)
            data = heatmap(page, expected_labels(shared))
            assert data.get("y") == expected_labels(shared) and data["x"] == data["y"]
            assert "Layer 2, head 3" in data["title"]  # streamlit's theme wraps titles in <b>
            page.get_by_test_id("stSidebarUserContent").get_by_test_id("stSlider").wait_for(timeout=60_000)

            # Type on the Playground, then open the Attention page from the navigation.
            page.locator(".st-key-app_nav").get_by_role("link", name="Playground").click()
            box = page.get_by_role("textbox", name="Sentences — one per line")
            box.wait_for(timeout=60_000)
            box.fill(second)
            box.press("Control+Enter")
            # wait for this sentence's own result: "Ran on" is already there from the shared sentence
            page.get_by_text("boring", exact=True).first.wait_for(timeout=300_000)
            page.locator(".st-key-app_nav").get_by_role("link", name="Attention").click()
            data = heatmap(page, expected_labels(second))
            assert data.get("y") == expected_labels(second)
            # The address bar holds the sentence, so it can be shared from this page.
            url = urllib.parse.urlparse(page.evaluate("window.location.href"))
            assert url.path.endswith("/attention")
            assert urllib.parse.parse_qs(url.query).get("text") == [second]
        except Exception:
            save_screenshot(page)
            raise
        finally:
            browser.close()
