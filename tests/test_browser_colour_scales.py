"""Every colour scale runs one way in lightness as the browser draws it (issue 40, item 1), in English at
1366 × 768 and in Korean in presenter mode at 1920 × 1080.

Streamlit's front end rewrites "#000001" … "#000040" in a figure's JSON (its theme's placeholders):
Inferno's first colour "#000004" reached the Vision page as light violet "#ab63fa", brighter than the
values just above it. This test reads each heatmap's colour scale from the drawn plotly div, after
that rewrite, and checks its lightness order: a sequential scale rises or falls throughout; a
diverging one (light in the middle) rises to one peak and falls. Category scales (bands of one
colour each, such as the head-atlas roles) are not ordered and are left out.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_server import ARTIFACTS, launch, needs_chromium, poll, server_url  # noqa: F401

SCALES = """() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const scales = d => [d.colorscale, d.marker && d.marker.showscale ? d.marker.colorscale : null];
  return plots.flatMap(gd => (gd._fullData || [])
    .filter(d => d.visible !== false)
    .flatMap(d => scales(d).filter(Array.isArray)
      .map(scale => ({meta: String((gd.layout && gd.layout.meta) || ''), type: d.type, scale}))));
}"""

# page address -> the figure (layout.meta) whose scale must be among those read: each page's heatmap
PAGES = {
    "vision?vdigit=3": "vision-overlay",
    "attention": "",
    "masks": "",
    "positional_encoding": "",
    "generate": "",
    "translate": "",
    "classifier": "",
    "head_atlas": "",
}
# (language, viewport, presenter mode, pages): the scales must not change with any of them; the second
# view checks a few pages only (each page is a fresh run on a shared CPU: all of them took 12 minutes)
VIEWS = [("en", (1366, 768), False, tuple(PAGES)), ("ko", (1920, 1080), True, ("vision?vdigit=3", "classifier"))]


def lightness(colour: str) -> float:
    """CIE L* (0 black … 100 white) of '#rrggbb', 'rgb(r, g, b)' or 'rgba(r, g, b, a)' (drawn over white)."""
    if colour.startswith("#"):
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        alpha = 1.0
    else:
        parts = [float(x) for x in re.findall(r"[\d.]+", colour)]
        (r, g, b), alpha = parts[:3], (parts[3] if len(parts) > 3 else 1.0)
    channels = [alpha * c / 255 + (1 - alpha) for c in (r, g, b)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    y = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 116 * y ** (1 / 3) - 16 if y > 0.008856 else 903.3 * y


def is_category_scale(scale: list) -> bool:
    """Bands of one colour each: every stop's position repeats (a class or role legend, not an order)."""
    positions = [pos for pos, _ in scale]
    return len(set(positions)) < len(positions) or len({c for _, c in scale}) == 1


def runs_one_way(scale: list, tolerance: float = 0.5) -> bool:
    """Lightness monotone, or rising to one peak and then falling (a diverging scale, light in the middle)."""
    values = [lightness(c) for _, c in scale]
    peak = values.index(max(values))
    up = all(b >= a - tolerance for a, b in zip(values[: peak + 1], values[1 : peak + 1]))
    down = all(b <= a + tolerance for a, b in zip(values[peak:], values[peak + 1 :]))
    falling = all(b <= a + tolerance for a, b in zip(values, values[1:]))
    return (up and down) or falling


def test_lightness_helpers_catch_the_rewritten_inferno():
    broken = [[0, "#ab63fa"], [0.11, "#1b0c41"], [0.22, "#4a0c6b"], [1, "#fcffa4"]]
    assert not runs_one_way(broken)
    assert runs_one_way([[0, "rgb(0, 0, 4)"], [0.11, "rgb(27, 12, 65)"], [1, "rgb(252, 255, 164)"]])
    assert runs_one_way([[0, "rgb(103,0,31)"], [0.5, "rgb(247,247,247)"], [1, "rgb(5,48,97)"]])  # RdBu
    assert is_category_scale([[0, "#aaa"], [0.5, "#aaa"], [0.5, "#bbb"], [1, "#bbb"]])


def test_the_app_scales_hold_no_streamlit_placeholder_and_run_one_way():
    from ui.figures.common import DIVERGING, SEQUENTIAL, browser_scale
    from ui.figures.translation import LIGHT_GREENS
    from ui.figures.vision import HEAT

    for scale in (DIVERGING, SEQUENTIAL, HEAT, LIGHT_GREENS, browser_scale("Viridis")):
        assert not re.search(r"#0000[0-4][0-9]", str(scale)) and runs_one_way(scale)
    assert HEAT[0][1] == "rgb(0, 0, 4)"  # Inferno's "#000004", which Streamlit took for its placeholder


@needs_chromium
@pytest.mark.parametrize("lang, size, present, pages", VIEWS)
def test_every_heatmap_scale_runs_one_way_in_the_browser(server_url, lang, size, present, pages):  # noqa: F811
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    seen: dict[str, list] = {}
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        try:
            for address in pages:
                meta = PAGES[address]
                sep = "&" if "?" in address else "?"
                query = f"lang={lang}" + ("&present=1" if present else "")
                page.goto(f"{server_url}/{address}{sep}{query}", wait_until="domcontentloaded", timeout=180_000)
                found = poll(page, SCALES, lambda s, m=meta: bool(s) and any(m in x["meta"] for x in s), timeout=480)
                assert found, f"no heatmap drawn on {address}"
                seen[address] = found
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "test_browser_colour_scales_failure.png"), timeout=20_000)
            raise
        finally:
            browser.close()
    vision = next(x["scale"] for x in seen["vision?vdigit=3"] if x["meta"] == "vision-overlay")
    assert lightness(vision[0][1]) < 1 < lightness(vision[-1][1])  # starts black, not violet
    wrong = [
        (address, x["meta"], x["scale"][:3])
        for address, scales in seen.items()
        for x in scales
        if not is_category_scale(x["scale"]) and not runs_one_way(x["scale"])
    ]
    assert not wrong, wrong
