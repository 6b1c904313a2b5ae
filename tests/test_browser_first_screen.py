"""Real browser at a laptop's 1366×768, English and Korean: each page's main figure starts on the first
screen (its top at most FIRST_SCREEN px down the page, so that at least 150 px of it show without scrolling);
the Train page's curves once its "reverse" preset is pressed.
Screenshots: ``test-artifacts/first-screen-<page>-<lang>.png``; the tops measured are printed."""

from __future__ import annotations

from tests import browser_server
from tests.browser_server import ARTIFACTS, launch, needs_chromium, poll, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

HEIGHT = 768
FIRST_SCREEN = HEIGHT - 150
# pages whose main figure must start higher, so that at least 300 px of it show (issue 50, item 6)
HIGHER = {"masks": HEIGHT - 300, "train": HEIGHT - 300, "generate": HEIGHT - 300, "residual": HEIGHT - 300,
          "similarity": HEIGHT - 300}  # fmt: skip
# page -> the main figure: a plotly figure's layout.meta, or the CSS selector of its element
MAIN_FIGURE = {
    "attention": "attention-heatmap",
    "masks": "padding-mask-0",
    "classifier": ".st-key-classifier_strip_integrated",
    "playground": "probability-bars",
    "generate": "generate-next",
    "residual": "residual-lens",
    "train": "train-curves",
    "similarity": "similarity-matrix",
}
# pages whose main figure appears after a click: page -> the button's key (Train: its curves, once a preset trains)
CLICK_FIRST = {"train": "train_preset_reverse"}
TOP = """(which) => {
  const el = which.startsWith('.') ? document.querySelector(which)
    : [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && p.layout.meta === which);
  if (!el || el.getBoundingClientRect().height < 50) return null;
  const main = document.querySelector('[data-testid="stMain"]');
  return Math.round(el.getBoundingClientRect().top + (main ? main.scrollTop : 0) + window.scrollY);
}"""


def test_every_main_figure_starts_on_the_first_screen(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    tops, late = {}, []
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for lang in ("en", "ko"):
                page = browser.new_page(viewport={"width": 1366, "height": HEIGHT})
                page.set_default_timeout(240_000)
                for name, figure in MAIN_FIGURE.items():
                    page.goto(f"{server_url}/{name}?lang={lang}", wait_until="domcontentloaded", timeout=180_000)
                    if name in CLICK_FIRST:
                        page.locator(f".st-key-{CLICK_FIRST[name]} button").first.click()
                    poll(page, TOP, lambda top: top is not None, timeout=240, arg=figure)
                    settle(page, timeout=20 if name in CLICK_FIRST else 240)  # a training reruns its view on and on
                    page.screenshot(path=str(ARTIFACTS / f"first-screen-{name}-{lang}.png"))
                    tops[(name, lang)] = top = page.evaluate(TOP, figure)
                    if top is None or top > HIGHER.get(name, FIRST_SCREEN):
                        late.append(f"{name} ({lang}): the main figure starts at {top} px")
                page.close()
        finally:
            browser.close()
    print(tops)
    assert not late, "\n".join(late)
