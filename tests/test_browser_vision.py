"""A real browser opens the Vision page from a shared link and sees attention drawn over the picture."""

from __future__ import annotations

from tests.browser_server import ROOT, chromium_page, needs_chromium, poll, server_url  # noqa: F401

pytestmark = needs_chromium

OVERLAY = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const gd = plots.find(p => p.layout && p.layout.meta === 'vision-overlay');
  if (!gd) return null;
  const heat = gd._fullData.find(d => d.type === 'heatmap');
  return {title: gd.layout.title.text, types: gd.data.map(d => d.type),
          hasImage: gd.querySelectorAll('image').length >= 2, heatDrawn: !!gd.querySelector('g.hm image'),
          rows: heat && heat.z ? heat.z.length : 0};
}"""


def test_vision_page_draws_the_overlay(server_url):  # noqa: F811 - the fixture
    assert (ROOT / "assets" / "models" / "vit-digits").is_dir()
    with chromium_page(failure_shot="test_browser_vision_failure.png") as page:
        page.goto(f"{server_url}/vision?vdigit=3", wait_until="domcontentloaded", timeout=180_000)
        data = poll(page, OVERLAY, lambda d: bool(d and d["hasImage"])) or {}
        # a grey digit: the attention grid (opaque), the digit's ink over it, and the patches to click
        assert data.get("types") == ["heatmap", "heatmap", "scatter"] and data["heatDrawn"] and data["rows"] == 4
        assert "Class token, layer 4, head 1" in data["title"]
        page.get_by_text("Prediction", exact=True).first.wait_for(timeout=60_000)
        assert page.get_by_test_id("stMetricValue").first.inner_text().strip() == "3"
