"""A real browser draws a digit with the mouse in the Vision page's drawing box and sees the prediction,
in English and Korean, at a laptop's size and a projector's; then clears the box.

Screenshots: ``test-artifacts/vision-draw-<lang>-<width>x<height>.png`` (the first screen, with the
drawing) and ``…-prediction.png`` (scrolled to the prediction), for a person to look at.
"""

from __future__ import annotations

import time

from tests.browser_server import ARTIFACTS, launch, needs_chromium, poll, server_url, settle  # noqa: F401

pytestmark = needs_chromium

SEVEN = [[(70, 60), (120, 58), (170, 57), (215, 60), (190, 110), (165, 160), (140, 210), (125, 245)]]  # box pixels
CANVAS_SHOWN = "() => [...document.querySelectorAll('*')].some(e => e.shadowRoot?.querySelector('canvas'))"
ANSWER = """(top3) => {
  const value = document.querySelector('[data-testid="stMetricValue"]');
  const running = document.querySelector('[data-testid="stStatusWidget"]');
  const captions = [...document.querySelectorAll('[data-testid="stCaptionContainer"], [data-testid="stAlertContainer"]')];
  const texts = captions.map(e => e.innerText);
  return value && !running && texts.some(t => t.includes(top3)) ? {value: value.innerText.trim(), texts: texts} : null;
}"""  # the metric can be drawn a moment before the top-3 line under it: wait for both
ON_FIRST_SCREEN = """() => {
  const value = document.querySelector('[data-testid="stMetricValue"]').getBoundingClientRect();
  const box = [...document.querySelectorAll('iframe, *')].find(e => e.shadowRoot?.querySelector('canvas'))
    || document.querySelector('iframe');
  return value.bottom <= window.innerHeight && (!box || value.top < box.getBoundingClientRect().bottom);
}"""  # the predicted digit is beside the box, not under it
SOURCE = {"en": "Draw", "ko": "그리기"}
TOP3 = {"en": "Top 3:", "ko": "상위 3개:"}
SIZES = ((1366, 768), (1920, 1080))


def draw(page, strokes) -> None:
    canvas = page.locator("canvas").last
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    time.sleep(0.5)  # the canvas's toolbar covers the box's top right corner until the pointer has rested over it
    for stroke in strokes:
        page.mouse.move(box["x"] + stroke[0][0], box["y"] + stroke[0][1])
        page.mouse.down()
        for x, y in stroke[1:]:
            page.mouse.move(box["x"] + x, box["y"] + y, steps=4)
        page.mouse.up()


def test_a_digit_drawn_with_the_mouse_is_predicted_and_the_box_clears(server_url):  # noqa: F811 - the fixture
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for lang in ("en", "ko"):
                for width, height in SIZES:
                    page = browser.new_page(viewport={"width": width, "height": height})
                    page.set_default_timeout(120_000)
                    name = f"vision-draw-{lang}-{width}x{height}"
                    try:
                        drawn_and_predicted(page, f"{server_url}/vision?lang={lang}", lang, name)
                        if (lang, width) == ("en", 1366):
                            cleared(page)
                    except Exception:
                        page.screenshot(path=str(ARTIFACTS / f"{name}-failure.png"), timeout=20_000)
                        raise
                    page.close()
        finally:
            browser.close()


def drawn_and_predicted(page, url: str, lang: str, name: str) -> None:
    page.goto(url, wait_until="domcontentloaded", timeout=180_000)
    page.get_by_text(SOURCE[lang], exact=True).first.click(timeout=180_000)
    assert poll(page, CANVAS_SHOWN, bool, timeout=180)
    settle(page)
    assert page.locator('[data-testid="stMetricValue"]').count() == 0  # nothing predicted before a stroke
    draw(page, SEVEN)
    answer = poll(page, ANSWER, bool, timeout=180, arg=TOP3[lang])
    assert answer, "no prediction with its top-3 line within 180 s"
    assert answer["value"] == "7", answer
    settle(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    time.sleep(0.5)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), timeout=60_000)
    assert page.evaluate(ON_FIRST_SCREEN), "the prediction is not on the first screen beside the drawing"
    page.get_by_test_id("stMetricValue").first.scroll_into_view_if_needed()
    time.sleep(0.5)
    page.screenshot(path=str(ARTIFACTS / f"{name}-prediction.png"), timeout=60_000)


def cleared(page) -> None:
    page.get_by_role("button", name="Clear the drawing").click()
    assert poll(page, "() => !document.querySelector('[data-testid=\"stMetricValue\"]')", bool, timeout=120)
    page.get_by_text("Draw a digit in the box above.").wait_for(timeout=60_000)
    assert poll(page, CANVAS_SHOWN, bool, timeout=60)
