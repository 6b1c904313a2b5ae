"""At most SLOTS analyses run at once in one server process, within a byte budget; a request over it
waits with a visible queued notice (English and Korean); memory is handed back after big ones."""

import contextlib
import threading
import time

import pytest

from ui import work_slots


def test_no_more_than_the_slots_run_at_once(monkeypatch):
    trims = []
    monkeypatch.setattr(work_slots, "give_memory_back", lambda: trims.append(1))
    running, most = [0], [0]
    lock = threading.Lock()

    def work(size: int) -> None:
        with work_slots.analysis_slot(size):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    sizes = [work_slots.TRIM_AFTER_BYTES] * 3 + [10] * 5
    threads = [threading.Thread(target=work, args=(size,)) for size in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == work_slots.SLOTS == 2
    assert len(trims) == 3  # only after the large ones


def test_memory_is_handed_back_on_glibc():
    assert work_slots.give_memory_back() is (work_slots._malloc_trim() is not None)


def test_the_byte_budget_admits_what_fits_and_a_larger_one_alone():
    budget = work_slots.Budget(slots=3, max_bytes=100)
    assert budget.try_enter(60)
    assert not budget.try_enter(60)  # 120 > 100 although a slot is free
    assert budget.try_enter(40)
    budget.leave(60), budget.leave(40)
    assert budget.try_enter(150)  # more than the whole budget: admitted alone
    assert not budget.try_enter(1)
    budget.leave(150)
    assert budget.running == 0 and budget.bytes == 0


def test_a_request_over_the_budget_waits_with_the_queued_notice(monkeypatch):
    monkeypatch.setattr(work_slots, "BUDGET", work_slots.Budget(slots=1, max_bytes=10**9))
    notices, order = [], []

    @contextlib.contextmanager
    def notice():
        notices.append(work_slots.BUDGET.running)
        yield

    monkeypatch.setattr(work_slots, "queued_notice", notice)
    entered = threading.Event()

    def first():
        with work_slots.analysis_slot():
            entered.set()
            time.sleep(0.2)
            order.append("first")

    thread = threading.Thread(target=first)
    thread.start()
    entered.wait(5)
    with work_slots.analysis_slot():
        order.append("second")
    thread.join()
    assert order == ["first", "second"]  # the second waited, it was not refused or run beside it
    assert notices == [1]  # told once, while the first was running
    with work_slots.analysis_slot():  # nothing running: no notice
        pass
    assert notices == [1]


def _notice_script(lang: str) -> None:
    import streamlit as st

    from ui import session, work_slots

    session.set_language(lang)
    work_slots.show_queued()  # what a waiting request shows until it starts
    st.write("after")


@pytest.mark.parametrize("lang, words", [("en", "Queued"), ("ko", "대기 중")])
def test_the_queued_notice_is_shown_in_the_sessions_language(lang, words):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_notice_script, args=(lang,), default_timeout=30).run()
    assert not at.exception
    assert any(words in box.value for box in at.info), [box.value for box in at.info]
