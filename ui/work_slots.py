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

SLOTS = max(1, int(os.environ.get("ATTENTION_LAB_ANALYSES", 2)))
TRIM_AFTER_BYTES = 16_000_000  # hand memory back after an analysis expected to need at least this

_slots = threading.BoundedSemaphore(SLOTS)  # process-wide limit, not per-request state


@contextlib.contextmanager
def analysis_slot(expected_bytes: int = 0) -> Iterator[None]:
    """Hold one of the process's analysis slots while the block runs (waiting for one if needed)."""
    with _slots:
        yield
    if expected_bytes >= TRIM_AFTER_BYTES:
        give_memory_back()


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
