"""In a real browser the Generate page marks the new tokens with a styled span, and a continuation that
starts with punctuation shows no literal "**" (issue 40, item 2)."""

from __future__ import annotations

from tests.browser_server import ARTIFACTS, launch, needs_chromium, poll, server_url  # noqa: F401

pytestmark = needs_chromium

MARKED = """() => {
  const span = document.querySelector('span.al-new-tokens');
  if (!span) return null;
  const style = getComputedStyle(span);
  return {whole: span.parentElement.innerText, marked: span.innerText, weight: style.fontWeight,
          background: style.backgroundColor};
}"""


def test_a_continuation_starting_with_a_comma_is_marked_without_stars(server_url):  # noqa: F811 - the fixture
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        try:
            page.goto(f"{server_url}/generate?gen_prompt=The+acting+was+great", wait_until="domcontentloaded",
                      timeout=180_000)  # fmt: skip
            found = poll(page, MARKED, bool, timeout=240) or {}
            page.locator("span.al-new-tokens").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "generate_marked_continuation.png"))
        finally:
            browser.close()
    assert found["whole"].startswith("The acting was great" + found["marked"])
    assert found["marked"][:1] in ",.;:!?-" and "**" not in found["whole"]
    assert int(found["weight"]) >= 700 and found["background"] == "rgb(254, 243, 199)"
