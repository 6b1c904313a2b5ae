"""A change reaches a student's screen at once: the server runs the screen when its class changes.

A student's screen polls (every ``STUDENT_EVERY_S``, ``ui.classroom.student``), and a poll finds a reveal or a new
question only when it comes round. So every run of a student's screen also says what it shows (:func:`showing`): its
class and the question on it, revealed or not (or that the class has ended). One thread per server process and
store (:class:`Watcher`) reads, every ``WATCH_S`` seconds, the state of each class that has screens on this
process (one read per class, not per screen) and asks Streamlit to run, now, the fragment of every screen that
shows something else (``ui.streamlit_internals.rerun_fragment``: the request the browser's own timer makes,
without widget states, so that a click waiting to be run keeps its value). Each screen is asked once per change;
its run then says what it shows now.

The poll stays: it brings what a push did not (a request lost while the page reconnected, a run whose elements the
page lost), and it is what the poll watch (``ui.classroom.poll_watch``) looks at. A screen that has not run for
``FORGET_S`` seconds (a closed tab, a page left) is forgotten. Cost: a screen's entry is a few strings; the thread
reads the store ``1 / WATCH_S`` times a second per class with screens on this process, and only sleeps when
there are none.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import streamlit_internals as internals
from .store import ClassError, ClassStore, Question

WATCH_S = 0.2  # how often the thread reads each watched class's state
FORGET_S = 60.0  # a screen that has not run this long is no longer watched
_LOG = logging.getLogger(__name__)

# What a screen shows of its class: (question number, revealed); None: no question yet; a refusal's reason (the
# class closed or expired, or a store that could not answer the screen's run)
Shown = tuple[int, bool] | str | None
UNANSWERED = ("store_unavailable", "store_read_only")  # the store could not say: no state to push


def shown_of(now: Question | ClassError | None) -> Shown:
    """What a screen shows of its class's state, from what the store said: the question on it and whether it is
    revealed, or why there is none."""
    if isinstance(now, ClassError):
        return now.reason
    return None if now is None else (now.number, now.revealed)


@dataclass
class Screen:
    code: str
    run: internals.FragmentRun
    shown: Shown
    told: Shown  # the state it was last asked to run for (so that it is asked once per change)
    seen: float  # when it last ran (time.monotonic)


class Watcher:
    """The screens of one store on this process, and the thread that runs each one whose class changed.

    ``rerun`` asks for a screen's run (``rerun_fragment``; False: the screen is gone); ``clock`` is monotonic;
    ``threaded`` False: no thread, the caller calls :meth:`check`."""

    def __init__(
        self,
        store: ClassStore,
        rerun: Callable[[internals.FragmentRun], bool] = internals.rerun_fragment,
        clock: Callable[[], float] = time.monotonic,
        threaded: bool = True,
    ) -> None:
        self.store, self.rerun, self.clock, self.threaded = store, rerun, clock, threaded
        self._screens: dict[str, Screen] = {}  # by browser session
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    def showing(self, code: str, run: internals.FragmentRun, shown: Shown) -> None:
        """Screen ``run`` (of class ``code``) shows ``shown`` now; starts the thread at the first screen."""
        with self._lock:
            self._screens[run.session] = Screen(code, run, shown, shown, self.clock())
            if self.threaded and self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="class-push", daemon=True)
                self._thread.start()

    def watched(self) -> int:
        with self._lock:
            return len(self._screens)

    def check(self) -> int:
        """One look at every watched class: asks each screen that shows something else to run. Returns how many
        were asked."""
        now = self.clock()
        with self._lock:
            for session in [s for s, screen in self._screens.items() if now - screen.seen > FORGET_S]:
                del self._screens[session]
            by_class: dict[str, list[Screen]] = {}
            for screen in self._screens.values():
                by_class.setdefault(screen.code, []).append(screen)
        asked = 0
        for code, screens in by_class.items():
            try:
                state = shown_of(self.store.current(code))
            except ClassError as err:
                if err.reason in UNANSWERED:
                    continue  # the store cannot answer now: the polls carry on
                state = shown_of(err)  # the class was closed, or has expired
            for screen in screens:
                if state in (screen.shown, screen.told):
                    continue
                screen.told = state
                if self.rerun(screen.run):
                    asked += 1
                else:
                    self._forget(screen)
        return asked

    def _forget(self, screen: Screen) -> None:
        with self._lock:
            if self._screens.get(screen.run.session) is screen:
                del self._screens[screen.run.session]

    def stop(self) -> None:
        """Ends the thread (a server's watcher runs as long as its process)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        while not self._stopped.wait(WATCH_S):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - the thread must outlive any one failure; the polls carry on
                _LOG.exception("the class watcher failed once; it goes on")


_WATCHERS: dict[int, Watcher] = {}  # by id of the store (one store per location and process)
_WATCHERS_LOCK = threading.Lock()


def watcher(store: ClassStore) -> Watcher:
    with _WATCHERS_LOCK:
        found = _WATCHERS.get(id(store))
        if found is None or found.store is not store:
            found = _WATCHERS[id(store)] = Watcher(store)
        return found


def showing(store: ClassStore, code: str, now: Question | ClassError | None) -> None:
    """Called by a student's screen at every run: it shows ``now`` of class ``code`` (the question on screen, or
    the refusal it shows instead). Does nothing outside a fragment's run on a server (AppTest), or when Streamlit's
    private objects are not where they were (an upgrade: the screen's poll still brings every change)."""
    try:
        run = internals.this_fragment()
    except Exception:  # noqa: BLE001 - never the reason a student's screen fails
        _LOG.warning(
            "a student's screen cannot be pushed to (Streamlit's run context changed): it polls", exc_info=True
        )
        return
    if run is not None:
        watcher(store).showing(code, run, shown_of(now))
