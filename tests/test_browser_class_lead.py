"""Two teacher screens on one class in a real browser: the projector (English, presenter mode, 1920x1080) starts
the class and asks; a second screen (Korean, 1366x768) opens it with the code and the teacher key and takes the
lead; the projector then says, in a warning a back row can read, that another screen leads and offers to take
the lead back, and after it does the second screen says the same in Korean. Screenshots:
test-artifacts/class_lead_{en_1920,ko_1366}.png (looked at)."""

from __future__ import annotations

from tests.browser_server import ARTIFACTS, ask_from_attention, chromium_page, needs_chromium, server_url, settle  # noqa: F401

pytestmark = needs_chromium
WARNING = '[data-testid="stAlertContentWarning"]'


def take_lead_button(page):
    return page.locator(".st-key-class_take_lead button")


def test_a_second_teacher_screen_takes_the_lead_and_the_first_says_so(server_url):  # noqa: F811 - the fixture
    with chromium_page(1920, 1080, failure_shot="class_lead_failed.png") as projector:
        projector.goto(f"{server_url}/class?present=1&lang=en")
        projector.locator(".st-key-class_start button").click()
        code = projector.locator(".class-code").inner_text().strip()
        projector.get_by_text("Teacher key (to take this class back").click()
        key = projector.locator('[data-testid="stExpanderDetails"] [data-testid="stCode"] code').inner_text().strip()
        assert len(key) >= 24 and key not in projector.url
        ask_from_attention(projector)

        laptop = projector.context.browser.new_page(viewport={"width": 1366, "height": 768})
        laptop.set_default_timeout(120_000)
        laptop.goto(f"{server_url}/class?lang=ko")
        laptop.get_by_text("수업 되찾기").click()
        laptop.locator(".st-key-class_resume_code input").fill(code)
        laptop.locator(".st-key-class_resume_key input").fill(key)
        laptop.locator(".st-key-class_resume_go button").click()
        laptop.locator(".st-key-class_reveal button").wait_for()  # the second screen leads

        take_lead_button(projector).wait_for(timeout=30_000)  # the projector's poll (every 2 s) noticed
        assert projector.locator(WARNING).filter(has_text="Only this computer can open this address").count() == 1
        warning = projector.locator(WARNING).filter(has_text="Another teacher screen leads this class")
        assert warning.count() == 1
        assert projector.locator(".st-key-class_reveal button").count() == 0
        size = warning.locator("p").first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
        assert size >= 20, size  # presenter mode: readable from the back row
        settle(projector)
        projector.screenshot(path=str(ARTIFACTS / "class_lead_en_1920.png"))

        take_lead_button(projector).click()
        projector.locator(".st-key-class_reveal button").wait_for()
        take_lead_button(laptop).wait_for(timeout=30_000)
        assert laptop.locator(WARNING).filter(has_text="다른 교사 화면이 이 수업을 이끌고").count() == 1
        settle(laptop)
        laptop.screenshot(path=str(ARTIFACTS / "class_lead_ko_1366.png"))
