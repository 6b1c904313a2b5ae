"""Real browser at a laptop's 1366×768 (issue 50, item 5): the language switch shows without scrolling,
above the page list (the Start page says it is at the top of the sidebar), and the Classifier's head
switches on the English default (12 heads per layer) each show their whole name, "L3 H7"."""

from __future__ import annotations

from tests.browser_server import ARTIFACTS, chromium_page, needs_chromium, serving_app, settle

pytestmark = needs_chromium

BOX = "(s) => { const el = document.querySelector(s); if (!el) return null; const b = el.getBoundingClientRect(); return [b.top, b.bottom]; }"
PILLS = """() => [...document.querySelectorAll('.st-key-classifier_off_2 button')].map(b => ({
  text: b.innerText.trim(), cut: b.scrollWidth > b.clientWidth + 1 }))"""


def test_the_language_switch_is_first_and_head_switches_read_in_full(monkeypatch):
    ARTIFACTS.mkdir(exist_ok=True)
    monkeypatch.delenv("ATTENTION_LAB_ENGLISH_MODEL", raising=False)  # the shipped English default: 12 heads
    with serving_app() as (server_url, _), chromium_page(1366, 768) as page:
        for lang in ("en", "ko"):
            page.goto(f"{server_url}/?lang={lang}", wait_until="domcontentloaded", timeout=180_000)
            page.wait_for_selector(".st-key-lang_switch", timeout=180_000)
            settle(page)
            switch, pages = page.evaluate(BOX, ".st-key-lang_switch"), page.evaluate(BOX, ".st-key-app_nav")
            assert switch[1] <= 768 and switch[1] <= pages[0], (lang, switch, pages)
        page.goto(f"{server_url}/classifier?lang=en", wait_until="domcontentloaded", timeout=180_000)
        page.wait_for_selector(".st-key-classifier_off_2 button", timeout=300_000)
        settle(page)
        page.locator(".st-key-classifier_off_2").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "classifier-head-switches-en-1366x768.png"))
        pills = page.evaluate(PILLS)
        assert [pill["text"] for pill in pills][:-1] == [f"L3 H{h}" for h in range(1, 13)], pills
        assert not any(pill["cut"] for pill in pills), pills
