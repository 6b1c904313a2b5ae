"""A student's screen whose poll stopped is run again (ui/classroom/poll_watch.py), in a real browser.

The student's page records the timers Streamlit starts for the screen's poll (every ``RUN_EVERY_S`` s); the
test stops them, as happened to a few screens after a replica restart in the 30-student test, and the
teacher reveals. Without the watch that screen never shows the reveal; with it, the screen is run again once
its poll has been quiet ``STALE_S`` seconds, and its poll runs again."""

from __future__ import annotations

import time

from tests.browser_server import ARTIFACTS, ask_from_attention, chromium_page, needs_chromium, server_url  # noqa: F401
from ui.classroom.poll_watch import CHECK_S, STALE_S
from ui.classroom.reveal_html import ROOT_CLASS
from ui.classroom.student import REVEAL_KEY
from ui.classroom.view import RUN_EVERY_S

pytestmark = needs_chromium

# Keeps every timer the page starts at the poll's period, so that the test can stop them as the bug did.
RECORD_POLLS = f"""(() => {{
  const start = window.setInterval.bind(window);
  window.__classPolls = [];
  window.setInterval = (callback, ms, ...rest) => {{
    const id = start(callback, ms, ...rest);
    if (ms === {int(RUN_EVERY_S * 1000)}) window.__classPolls.push(id);
    return id;
  }};
}})();"""
STOP_POLLS = "() => { const n = window.__classPolls.length; window.__classPolls.forEach(clearInterval); " \
    "window.__classPolls = []; return n; }"  # fmt: skip
MARK = "() => document.querySelector('[data-polled]')?.getAttribute('data-polled') ?? null"


def test_a_screen_whose_poll_stopped_is_run_again_and_shows_the_reveal(server_url):  # noqa: F811 - the fixture
    with chromium_page(1920, 1080, failure_shot="class_poll_watch_failed.png") as projector:
        projector.goto(f"{server_url}/class?lang=en")
        projector.locator(".st-key-class_start button").click()
        code = projector.locator(".class-code").inner_text().strip()
        ask_from_attention(projector)

        student = projector.context.browser.new_page(viewport={"width": 1366, "height": 768})
        student.set_default_timeout(120_000)
        student.add_init_script(RECORD_POLLS)
        student.goto(f"{server_url}/class?code={code}&lang=ko")
        student.locator(".st-key-class_join_go button").click()
        student.locator(f".st-key-class_pick_{code}_1 button").first.wait_for()
        time.sleep(2 * RUN_EVERY_S)
        assert student.evaluate(STOP_POLLS) >= 1  # the screen's poll, stopped
        stopped_at = student.evaluate(MARK)
        time.sleep(2 * RUN_EVERY_S)
        assert student.evaluate(MARK) == stopped_at  # nothing polls now

        projector.locator(".st-key-class_reveal button").click()
        revealed_at = time.time()
        student.locator(f".st-key-{REVEAL_KEY} .{ROOT_CLASS}").wait_for(timeout=(STALE_S + 4 * CHECK_S + 30) * 1000)
        waited = time.time() - revealed_at
        assert waited <= STALE_S + 4 * CHECK_S + 30, waited
        assert student.evaluate("() => window.__classPolls.length") >= 1  # the poll was started again
        again = student.evaluate(MARK)
        time.sleep(3 * RUN_EVERY_S)
        assert student.evaluate(MARK) != again  # and it polls
        student.screenshot(path=str(ARTIFACTS / "class_poll_watch_ko_1366.png"))
