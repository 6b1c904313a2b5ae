"""Real browser: the guided tour walks the whole lesson in English and in Korean at a laptop's 1366×768.

At every step: no error box; the step's outlined controls were scrolled into the screen (the tour scrolls
to them, as steps 3 and 7 need: their controls were 2,200-2,700 px down the page); the figure the step is
about is on the screen (for the Masks steps, the figure of the section the step names, not "1. Padding"
for step 3). Screenshots of each step go to ``test-artifacts/lesson-<lang>-<n>.png``.
"""

from __future__ import annotations

import time

from tests import browser_server
from tests.browser_server import ARTIFACTS, launch, needs_chromium, settle

pytestmark = needs_chromium
server_url = browser_server.server_url  # the fixture, under the name the tests ask for

# The figure each step is about (None: any figure; a step not listed is about a text or a form, not a figure).
# Step 4 is about the padded batch: the first sentence's padding mask (the table of ids is below it).
STEP_FIGURE = {2: None, 3: "step-mask", 4: "padding-mask-0", 5: None, 6: None, 7: None,
               9: "translate-cross", 10: "generate-next", 11: "vision-overlay"}  # fmt: skip
ON_SCREEN = """(selector) => {
  const el = document.querySelector(selector);
  if (!el) return null;
  const box = el.getBoundingClientRect();
  return {top: box.top, bottom: box.bottom, height: window.innerHeight};
}"""
FIGURE_ON_SCREEN = """(meta) => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.layout && (!meta || p.layout.meta === meta));
  return plots.some(p => { const b = p.getBoundingClientRect(); return b.bottom > 60 && b.top < window.innerHeight - 60; });
}"""
PANEL = """() => {
  const panel = document.querySelector('.st-key-tour_panel');
  return panel ? panel.innerText.split('\\n')[0] : '';
}"""


def visible(box: dict | None) -> bool:
    return bool(box) and box["bottom"] > 0 and box["top"] < box["height"]


def walk(page, server_url: str, lang: str) -> list[str]:
    """Start the tour on the Start page and press Next to the end; returns what went wrong."""
    from ui.tour import lesson_for_pages

    problems = []
    page.goto(f"{server_url}/?lang={lang}", wait_until="domcontentloaded", timeout=180_000)
    settle(page)
    page.locator(".st-key-start_tour button").click()
    steps = lesson_for_pages(("playground", "attention", "positional_encoding", "masks", "classifier",
                              "checkpoints", "translate", "generate", "vision"))  # fmt: skip
    for number, step in enumerate(steps, start=1):
        page.wait_for_function(f"() => document.querySelector('.st-key-tour_panel')?.innerText.includes('{number}')")
        settle(page)
        time.sleep(3)  # the scroll runs once the outlined control is drawn, and again 1.5 s later
        page.screenshot(path=str(ARTIFACTS / f"lesson-{lang}-{number}.png"), timeout=60_000)
        where = f"{lang} step {number} ({step.page}): "
        if page.get_by_test_id("stException").count() or page.get_by_test_id("stAlertContentError").count():
            problems.append(where + "an error box is shown")
        outlined = ", ".join(f".st-key-{key}" for key in step.highlight)
        if step.highlight and not visible(page.evaluate(ON_SCREEN, outlined)):
            problems.append(where + f"outlined {step.highlight[0]} is not on the screen")
        meta = STEP_FIGURE.get(number, "")
        if meta != "" and not page.evaluate(FIGURE_ON_SCREEN, meta):
            problems.append(where + f"its figure {meta or '(any)'} is not on the screen")
        if number < len(steps):
            page.locator(".st-key-tour_next button").click()
    return problems


def test_the_lesson_lands_where_it_says_in_both_languages(server_url):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            problems = []
            for lang in ("en", "ko"):
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                page.set_default_timeout(240_000)
                problems += walk(page, server_url, lang)
                page.close()
            assert not problems, "\n".join(problems)
        finally:
            browser.close()
