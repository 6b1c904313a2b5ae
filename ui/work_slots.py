"""At most a few analyses at once in one server process, and their scratch memory given back after.

A class pasting long reviews in the same minute would otherwise run dozens of analyses at once:
each one's scratch memory (scores, softmax, copies: ~2-3x its ~67 MB result for 1,024 tokens) adds
up to gigabytes, and glibc keeps freed heap memory in the process. On a few cores, more analyses at
once are not faster anyway: they share the same cores. So an analysis waits for one of
``ATTENTION_LAB_ANALYSES`` slots (default 2), and after a large one the freed memory is handed back
to the system (glibc's ``malloc_trim``; nothing happens where that does not exist).
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

SLOTS = max(1, int(os.environ.get("ATTENTION_LAB_ANALYSES", 2)))
TRIM_AFTER_BYTES = 16_000_000  # hand memory back after an analysis expected to need at least this

_slots = threading.BoundedSemaphore(SLOTS)  # process-wide limit, not per-request state
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
    """Hold one of the process's analysis slots while the block runs (waiting for one if needed).

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
    with _slots:
        _held.depth = 1
        try:
            yield use
        finally:
            _held.depth = 0
    if use.expected_bytes >= TRIM_AFTER_BYTES:
        give_memory_back()


def holding_slot() -> bool:
    """Whether this thread is inside an :func:`analysis_slot` block."""
    return getattr(_held, "depth", 0) > 0


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
