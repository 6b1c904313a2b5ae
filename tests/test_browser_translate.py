"""Real browser: open the Translate page from a fresh server, wait for the cross-attention
heatmap with its Korean rows and the Korean translation, and keep a screenshot
(test-artifacts/translate*.png) for a person to check that Hangul renders (Debian's fonts-noto-cjk)."""

from __future__ import annotations

from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, poll, server_url  # noqa: F401
from transformer.translation import get_task
from ui.figures.common import token_labels

pytestmark = needs_chromium

CROSS_DATA = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const gd = plots.find(p => p.layout && p.layout.meta === 'translate-cross');
  return gd ? {title: gd.layout.title.text, y: Array.from(gd.data[0].y), x: Array.from(gd.data[0].x)} : null;
}"""


def test_translate_page_in_korean_renders_hangul(server_url):  # noqa: F811
    task = get_task("word-order")
    example = task.examples()[0]
    with chromium_page() as page:
        try:
            page.goto(f"{server_url}/translate?lang=ko", wait_until="domcontentloaded", timeout=180_000)
            data = poll(page, CROSS_DATA, lambda d: bool(d and d["y"])) or {}
            assert data.get("y") == token_labels([*example.target, "<eos>"])
            assert "교차 어텐션" in data["title"]
            # the output written as Korean writes it: particles attached (고양이는 집에서)
            page.get_by_text(task.written(example.target), exact=True).first.wait_for(timeout=60_000)
            page.wait_for_timeout(2000)  # let plotly finish drawing before the screenshots
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "translate_cross.png"), timeout=60_000)
            page.locator(".js-plotly-plot").nth(3).scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "translate_steps.png"), timeout=60_000)
            page.evaluate("window.scrollTo(0, 0)")
        finally:
            page.screenshot(path=str(ARTIFACTS / "translate.png"), full_page=True, timeout=60_000)
