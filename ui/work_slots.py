"""At most a few analyses at once in one server process, within a memory budget, and their scratch
memory given back after.

A class pasting long reviews in the same minute would otherwise run dozens of analyses at once:
each one's scratch memory (scores, softmax, copies: ~2-3x its ~67 MB result for 1,024 tokens) adds
up to gigabytes, and glibc keeps freed heap memory in the process. On a few cores, more analyses at
once are not faster anyway: they share the same cores. So an analysis waits until both hold:

- one of ``ATTENTION_LAB_ANALYSES`` slots is free (default 2);
- the bytes the running analyses said they expect, plus its own, fit ``ATTENTION_LAB_HEAVY_MB``
  (default: a quarter of the machine's memory, at most 4,000 MB). One that expects more than the
  whole budget runs alone.

A request that waits says so on its page ("queued", in the session's language) until it starts:
the server never runs more than the budget at once, and never ends the process for it. After a
large analysis the freed memory is handed back to the system (glibc's ``malloc_trim``; nothing
happens where that does not exist).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

MB = 1_000_000


def machine_bytes() -> int:
    """The machine's physical memory (8 GB where the system does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8_000 * MB


SLOTS = max(1, int(os.environ.get("ATTENTION_LAB_ANALYSES", 2)))
HEAVY_BYTES = int(float(os.environ.get("ATTENTION_LAB_HEAVY_MB", min(4_000, machine_bytes() / 4 / MB))) * MB)
TRIM_AFTER_BYTES = 16_000_000  # hand memory back after an analysis expected to need at least this


class Budget:
    """Admission for heavy work, process-wide: at most ``slots`` at once and their expected bytes
    within ``max_bytes`` (one larger than the whole budget is admitted only alone)."""

    def __init__(self, slots: int, max_bytes: int) -> None:
        self.slots, self.max_bytes = slots, max_bytes
        self.running = self.bytes = self.waiting = 0
        self._cond = threading.Condition()

    def _fits(self, nbytes: int) -> bool:
        if self.running >= self.slots:
            return False
        return self.running == 0 or self.bytes + nbytes <= self.max_bytes

    def try_enter(self, nbytes: int) -> bool:
        with self._cond:
            if not self._fits(nbytes):
                return False
            self.running, self.bytes = self.running + 1, self.bytes + nbytes
            return True

    def enter(self, nbytes: int) -> None:
        """Wait until ``nbytes`` more fit, then count them in."""
        with self._cond:
            self.waiting += 1
            try:
                self._cond.wait_for(lambda: self._fits(nbytes))
            finally:
                self.waiting -= 1
            self.running, self.bytes = self.running + 1, self.bytes + nbytes

    def leave(self, nbytes: int) -> None:
        with self._cond:
            self.running, self.bytes = self.running - 1, self.bytes - nbytes
            self._cond.notify_all()


BUDGET = Budget(SLOTS, HEAVY_BYTES)  # process-wide limit, not per-request state
_held = threading.local()  # how deep this thread is inside analysis_slot blocks


@dataclass
class SlotUse:
    """One holding of a slot: ``expected_bytes`` may be raised inside the block once the size of what
    ran is known (the memory is handed back after the block when it reaches TRIM_AFTER_BYTES)."""

    expected_bytes: int = 0

    def expect(self, nbytes: int) -> None:
        self.expected_bytes = max(self.expected_bytes, nbytes)


@contextlib.contextmanager
def analysis_slot(expected_bytes: int = 0) -> Iterator[SlotUse]:
    """Hold one of the process's analysis slots (and ``expected_bytes`` of its budget) while the block
    runs; a request that must wait shows the queued notice (:func:`queued_notice`) until it starts.

    Re-entrant within a thread: a computation that runs another one inside its block keeps its one
    slot (taking a second could wait forever once every slot is held by a thread doing the same)."""
    use = SlotUse(expected_bytes)
    depth = getattr(_held, "depth", 0)
    if depth:
        _held.depth = depth + 1
        try:
            yield use
        finally:
            _held.depth = depth
        return
    if not BUDGET.try_enter(expected_bytes):
        with queued_notice():
            BUDGET.enter(expected_bytes)
    _held.depth = 1
    try:
        yield use
    finally:
        _held.depth = 0
        BUDGET.leave(expected_bytes)
    if use.expected_bytes >= TRIM_AFTER_BYTES:
        give_memory_back()


def holding_slot() -> bool:
    """Whether this thread is inside an :func:`analysis_slot` block."""
    return getattr(_held, "depth", 0) > 0


@contextlib.contextmanager
def queued_notice() -> Iterator[None]:
    """While a request waits for the budget: the queued notice (:func:`show_queued`) on its page,
    removed when it starts."""
    box = show_queued()
    try:
        yield
    finally:
        if box is not None:
            box.empty()


def show_queued():
    """Draw on this run's page that it is queued (how many heavy computations run, how many wait);
    the notice's placeholder, or None outside a script run or where the page cannot draw (inside a
    function Streamlit caches)."""
    from . import streamlit_internals

    if streamlit_internals.run_context() is None:
        return None
    import streamlit as st

    from .i18n import t

    try:
        box = st.empty()
        box.info(t("common.queued", running=BUDGET.running, waiting=BUDGET.waiting + 1), icon="⏳")
    except Exception:  # noqa: BLE001 - no element may be drawn here: the request waits unseen
        return None
    return box


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim`` (None on other C libraries and systems)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def give_memory_back() -> bool:
    """Return the heap's free memory to the system; True where glibc did it."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
