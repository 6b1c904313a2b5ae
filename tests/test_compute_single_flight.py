"""Identical requests at once are computed once per process (issue 55): a class on the teacher's shared
link asking the same thing at the same moment waits for one computation, not one per session."""

from __future__ import annotations

import threading

from ui import compute, work_slots


def test_callers_of_a_key_being_computed_wait_for_that_value():
    store, runs, started, release = compute.ByteBudgetCache(10_000), [], threading.Event(), threading.Event()

    def slow():
        runs.append(1)
        started.set()
        release.wait(10)
        return "value"

    results = []
    first = threading.Thread(target=lambda: results.append(compute.cached(store, "k", slow)))
    first.start()
    started.wait(10)
    others = [threading.Thread(target=lambda: results.append(compute.cached(store, "k", slow))) for _ in range(5)]
    for thread in others:
        thread.start()
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert results == ["value"] * 6 and runs == [1]


def test_a_value_too_large_to_keep_is_computed_again_and_slot_false_takes_no_slot():
    store = compute.ByteBudgetCache(10)  # too small to keep the value
    calls = []

    def big():
        calls.append(work_slots.holding_slot())
        return "x" * 100

    assert compute.cached(store, "k", big, nbytes=100, slot=False) == "x" * 100
    assert compute.cached(store, "k", big, nbytes=100) == "x" * 100
    assert calls == [False, True]  # not kept, so run again; the first outside any analysis slot
