"""Real browser: text a class can read from the back row.

Every page (English and Korean, 1366×768): no error box, every figure text at 16 px or more, every
caption at 7:1 contrast or more on white (measured on the drawn page, as a projector shows it).
Presenter mode: the headline prediction at 36 px or more on the Playground and on Vision, every class
label of Vision's probability axis drawn, every query token of Translate's heatmap labelled, slider
values clear of their thumbs, every download button on screen width. Screenshots go to
``test-artifacts/readable-<page>-<lang>[-present].png``.
"""

from __future__ import annotations

from tests import browser_server
from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

PAGES = ["start", "playground", "attention", "positional_encoding", "masks", "classifier", "translate", "vision",
         "checkpoints"]  # fmt: skip
MEASURE = """() => {
  const luminance = (rgb) => {
    const [r, g, b] = rgb.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => v / 255)
      .map(c => c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const small = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    for (const el of gd.querySelectorAll('.main-svg text, .main-svg tspan')) {
      if (!el.textContent.trim() || el.closest('.modebar')) continue;
      const size = parseFloat(getComputedStyle(el).fontSize);
      if (size < 15.5) small.push(`${gd.layout.meta}: "${el.textContent.slice(0, 20)}" ${size}px`);
    }
  }
  const faint = [];
  for (const el of document.querySelectorAll('[data-testid="stCaptionContainer"]')) {
    if (!el.textContent.trim()) continue;
    // the colour as drawn on white: the text's alpha and every ancestor's opacity mix it with the white
    let alpha = Number((getComputedStyle(el).color.match(/[\\d.]+/g)[3]) ?? 1);
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) alpha *= Number(getComputedStyle(node).opacity);
    const drawn = getComputedStyle(el).color.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => v * alpha + 255 * (1 - alpha));
    const ratio = 1.05 / (luminance(`rgb(${drawn.join(',')})`) + 0.05);
    if (ratio < 7) faint.push(`"${el.textContent.slice(0, 30)}" ${ratio.toFixed(1)}:1`);
  }
  const errors = document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]').length;
  return {small: [...new Set(small)].slice(0, 8), faint: faint.slice(0, 5), errors};
}"""
PRESENTER = """() => {
  const metric = document.querySelector('[data-testid="stMetricValue"]');
  const inner = metric && (metric.querySelector('p, div') || metric);
  const probs = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout.meta === 'vision-probabilities');
  const cross = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout.meta === 'translate-cross');
  const overlapping = [...document.querySelectorAll('[data-testid="stSliderThumbValue"]')].filter(v => {
    const thumb = v.closest('[role="slider"]') || v.parentElement.querySelector('[role="slider"]');
    if (!thumb) return false;
    const a = v.getBoundingClientRect(), b = thumb.getBoundingClientRect();
    return a.bottom > b.top + 2 && a.top < b.bottom - 2;
  }).length;
  const downloads = [...document.querySelectorAll('[data-testid="stDownloadButton"]')];
  return {
    headline: metric ? parseFloat(getComputedStyle(inner).fontSize) : null,
    classes: probs ? probs.querySelectorAll('.xtick text').length : null,
    rows: cross ? cross.querySelectorAll('.ytick text').length : null,
    expectedRows: cross ? cross.data[0].y.length : null,
    overlapping,
    hidden: downloads.filter(d => d.getBoundingClientRect().width < 20).length,
    downloads: downloads.length,
  };
}"""


def open_page(page, server_url: str, name: str, query: str) -> None:
    page.goto(f"{server_url}/{'' if name == 'start' else name}?{query}", wait_until="domcontentloaded",
              timeout=180_000)  # fmt: skip
    settle(page)
    page.wait_for_timeout(1500)


def test_every_page_is_readable_in_both_languages(server_url):
    problems = []
    with chromium_page() as page:
        for lang in ("en", "ko"):
            for name in PAGES:
                open_page(page, server_url, name, f"lang={lang}")
                page.screenshot(path=str(ARTIFACTS / f"readable-{name}-{lang}.png"), timeout=60_000)
                found = page.evaluate(MEASURE)
                where = f"{name} ({lang})"
                problems += [f"{where}: an error box"] if found["errors"] else []
                problems += [f"{where}: figure text under 16 px: {s}" for s in found["small"]]
                problems += [f"{where}: caption under 7:1: {s}" for s in found["faint"]]
    assert not problems, "\n".join(problems)


def test_presenter_mode_keeps_what_matters_large(server_url):
    with chromium_page() as page:
        found = {}
        for name in ("playground", "vision", "translate"):
            open_page(page, server_url, name, "present=1")
            page.screenshot(path=str(ARTIFACTS / f"readable-{name}-en-present.png"), timeout=60_000)
            found[name] = page.evaluate(PRESENTER)
    for name in ("playground", "vision"):
        assert found[name]["headline"] and found[name]["headline"] >= 36, (name, found[name])
    assert found["vision"]["classes"] == 10, found["vision"]  # every digit class labelled
    assert found["translate"]["rows"] == found["translate"]["expectedRows"], found["translate"]
    assert all(f["overlapping"] == 0 for f in found.values()), found
    assert all(f["hidden"] == 0 for f in found.values()), found
