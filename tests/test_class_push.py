"""The class watcher (ui/classroom/push.py): which student screens it asks to run, and when it forgets one.

The request itself (``ui.streamlit_internals.rerun_fragment``) is replaced by a recorder here; a real browser
receives it in tests/test_browser_class_poll_watch.py (the reveal reaches a screen whose poll has stopped,
without a page run)."""

from __future__ import annotations

import threading

import pytest

from tests.test_class_store import location, postgres_url  # noqa: F401 - the store on SQLite and on PostgreSQL
from ui.classroom import push
from ui.classroom.store import ClassError, open_store
from ui.streamlit_internals import FragmentRun


def screen(name: str) -> FragmentRun:
    return FragmentRun(session=name, fragment=f"fragment-{name}", page="class-page", query=f"code=X&me={name}")


class Recorder:
    def __init__(self, gone: frozenset[str] = frozenset()) -> None:
        self.asked: list[str] = []
        self.gone = gone

    def __call__(self, run: FragmentRun) -> bool:
        self.asked.append(run.session)
        return run.session not in self.gone


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def room(location):  # noqa: F811 - the fixture
    store = open_store(location)
    code, secret = store.start_class("en")
    store.ask(code, secret, "label", {"text": "the movie was great"}, 2, 0)
    yield store, code, secret
    store.close()


def test_a_screen_is_asked_once_when_its_question_is_revealed_and_not_when_it_shows_the_state(room):
    store, code, secret = room
    recorder = Recorder()
    watcher = push.Watcher(store, rerun=recorder, threaded=False)
    watcher.showing(code, screen("a"), push.shown_of(store.current(code)))
    watcher.showing(code, screen("b"), push.shown_of(store.current(code)))
    assert watcher.check() == 0 and recorder.asked == []  # both show the class as it is

    store.reveal(code, secret, 1)
    assert watcher.check() == 2 and sorted(recorder.asked) == ["a", "b"]
    assert watcher.check() == 0 and len(recorder.asked) == 2  # asked once per change, not at every look

    watcher.showing(code, screen("a"), (1, True))  # a's run drew the reveal
    store.ask(code, secret, "label", {"text": "a second sentence"}, 2, 1)
    assert watcher.check() == 2 and sorted(recorder.asked[2:]) == ["a", "b"]  # the new question, to both


def test_only_the_screens_of_the_class_that_changed_are_asked(room):
    store, code, secret = room
    other, other_secret = store.start_class("ko")
    store.ask(other, other_secret, "label", {"text": "x"}, 2, 0)
    recorder = Recorder()
    watcher = push.Watcher(store, rerun=recorder, threaded=False)
    watcher.showing(code, screen("here"), (1, False))
    watcher.showing(other, screen("there"), (1, False))
    store.reveal(other, other_secret, 1)
    assert watcher.check() == 1 and recorder.asked == ["there"]


def test_a_screen_that_is_gone_or_has_not_run_for_a_minute_is_forgotten(room):
    store, code, secret = room
    clock, recorder = Clock(), Recorder(gone=frozenset({"closed"}))
    watcher = push.Watcher(store, rerun=recorder, clock=clock, threaded=False)
    for name in ("closed", "open", "quiet"):
        watcher.showing(code, screen(name), (1, False))
    clock.now += push.FORGET_S / 2
    watcher.showing(code, screen("open"), (1, False))
    watcher.showing(code, screen("closed"), (1, False))
    clock.now += push.FORGET_S / 2 + 1  # "quiet" last ran more than FORGET_S ago
    store.reveal(code, secret, 1)
    assert watcher.check() == 1 and sorted(recorder.asked) == ["closed", "open"]
    assert watcher.watched() == 1  # "closed" (its session is gone) and "quiet" are no longer watched


def test_a_store_that_cannot_answer_asks_nobody_and_the_watcher_goes_on(room):
    store, code, secret = room

    class Unavailable:
        def current(self, code):
            raise ClassError("store_unavailable", "the disk is gone")

    recorder = Recorder()
    watcher = push.Watcher(Unavailable(), rerun=recorder, threaded=False)
    watcher.showing(code, screen("a"), (1, False))
    assert watcher.check() == 0 and recorder.asked == [] and watcher.watched() == 1


def test_outside_a_server_a_screen_registers_nothing(room):
    store, code, _ = room
    push.showing(store, code, store.current(code))  # no Streamlit run here (AppTest has no server either)
    assert push.watcher(store).watched() == 0


def test_a_closed_class_is_pushed_and_a_screen_that_could_not_read_the_store_is_run_when_it_can(room):
    store, code, secret = room
    recorder = Recorder()
    watcher = push.Watcher(store, rerun=recorder, threaded=False)
    watcher.showing(code, screen("a"), push.shown_of(store.current(code)))
    watcher.showing(code, screen("b"), push.shown_of(ClassError("store_unavailable", "busy")))  # its run was refused
    assert watcher.check() == 1 and recorder.asked == ["b"]  # the store answers now: b is drawn again at once

    store.close_class(code, secret)
    assert watcher.check() == 2 and sorted(recorder.asked[1:]) == ["a", "b"]  # both are told the class has ended
    with pytest.raises(ClassError) as closed:
        store.current(code)
    watcher.showing(code, screen("a"), push.shown_of(closed.value))  # a's run showed it
    assert watcher.check() == 0


def test_the_watchers_thread_reads_the_store_beside_the_runs_and_asks_the_screen(room):
    """The thread itself, on either store: a reveal made by another thread reaches the screen's request."""
    store, code, secret = room
    asked = threading.Event()
    watcher = push.Watcher(store, rerun=lambda run: asked.set() or True)
    watcher.showing(code, screen("a"), (1, False))
    try:
        store.reveal(code, secret, 1)
        assert asked.wait(timeout=30)  # WATCH_S is 0.2 s; 30 s only so that a loaded machine does not fail it
    finally:
        watcher.stop()
    assert not watcher._thread.is_alive()


def test_when_streamlits_private_objects_have_moved_a_screen_still_draws(room, monkeypatch):
    store, code, _ = room

    def moved():
        raise AttributeError("'ScriptRunContext' object has no attribute 'query_string'")

    monkeypatch.setattr(push.internals, "this_fragment", moved)
    push.showing(store, code, store.current(code))  # no exception: the screen goes on, on its poll
    assert push.watcher(store).watched() == 0
