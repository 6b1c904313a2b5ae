"""A student's screen whose poll stopped still gets the reveal, from the server (ui/classroom/push.py), and its
poll is started again (ui/classroom/poll_watch.py), in a real browser.

The student's page records the timers Streamlit starts for the screen's poll (every ``STUDENT_EVERY_S`` s); the
test stops them, as happened to a few screens after a replica restart in the 30-student test, and the
teacher reveals. The server runs the screen's fragment as soon as it sees the reveal: the reveal is drawn with
no page run (the poll's timers, which only a page run starts, are still stopped). Then the watch, once the
poll has been quiet ``stale_after(STUDENT_EVERY_S)`` seconds, runs the page again, and its poll runs again."""

from __future__ import annotations

import time

from tests.browser_server import ARTIFACTS, ask_from_attention, chromium_page, needs_chromium, poll, server_url  # noqa: F401
from ui.classroom.poll_watch import CHECK_S, stale_after
from ui.classroom.reveal_html import ROOT_CLASS
from ui.classroom.student import REVEAL_KEY
from ui.classroom.view import STUDENT_EVERY_S

pytestmark = needs_chromium
STALE_S = stale_after(STUDENT_EVERY_S)

# Keeps every timer the page starts at the poll's period, so that the test can stop them as the bug did.
RECORD_POLLS = f"""(() => {{
  const start = window.setInterval.bind(window);
  window.__classPolls = [];
  window.setInterval = (callback, ms, ...rest) => {{
    const id = start(callback, ms, ...rest);
    if (ms === {int(STUDENT_EVERY_S * 1000)}) window.__classPolls.push(id);
    return id;
  }};
}})();"""
STOP_POLLS = "() => { const n = window.__classPolls.length; window.__classPolls.forEach(clearInterval); " \
    "window.__classPolls = []; return n; }"  # fmt: skip
POLLS = "() => window.__classPolls.length"
MARK = "() => document.querySelector('[data-polled]')?.getAttribute('data-polled') ?? null"


def test_a_screen_whose_poll_stopped_is_sent_the_reveal_and_its_poll_is_run_again(server_url):  # noqa: F811
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
        time.sleep(2 * STUDENT_EVERY_S)
        assert student.evaluate(STOP_POLLS) >= 1  # the screen's poll, stopped
        stopped_at = student.evaluate(MARK)
        time.sleep(2 * STUDENT_EVERY_S)
        assert student.evaluate(MARK) == stopped_at  # nothing polls now

        projector.locator(".st-key-class_reveal button").click()
        student.locator(f".st-key-{REVEAL_KEY} .{ROOT_CLASS}").wait_for(timeout=(STALE_S + 4 * CHECK_S + 30) * 1000)
        assert student.evaluate(POLLS) == 0  # no page run brought the reveal (it starts the timers): the server did
        assert "모델의 답" in student.locator(".stMainBlockContainer").inner_text()  # in the student's language
        student.screenshot(path=str(ARTIFACTS / "class_poll_watch_ko_1366.png"))

        restarted = poll(student, POLLS, lambda n: n >= 1, timeout=STALE_S + 4 * CHECK_S + 30)
        assert restarted >= 1  # the watch ran the page again: the poll was started again
        again = student.evaluate(MARK)
        time.sleep(3 * STUDENT_EVERY_S)
        assert student.evaluate(MARK) != again  # and it polls
