"""The cached service (ui.compute): byte-bounded, per session for uploads, every run inside an analysis slot."""

from __future__ import annotations

import contextlib
import threading
import uuid

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.app_helpers import open_app
from ui import compute, work_slots


def test_the_shared_store_stays_within_its_bytes_least_recently_used_first(monkeypatch):
    store = compute.ByteBudgetCache(100)
    monkeypatch.setattr(compute, "shared_store", lambda: store)
    runs = []

    def value(name: str):
        return lambda: runs.append(name) or name

    for name in ("a", "b", "c"):
        compute.compute("probe", name, value(name), model="imdb-sentiment", nbytes=40)
    assert store.nbytes == 80 and runs == ["a", "b", "c"]  # "a" dropped to make room for "c"
    assert compute.compute("probe", "c", value("c"), model="imdb-sentiment", nbytes=40) == "c"
    assert compute.compute("probe", "a", value("a"), model="imdb-sentiment", nbytes=40) == "a"
    assert runs == ["a", "b", "c", "a"]  # "c" came from the store, "a" was run again
    assert compute.compute("probe", "huge", value("huge"), model="imdb-sentiment", nbytes=101) == "huge"
    assert store.nbytes <= 100 and ("imdb-sentiment", None, "probe", "huge") not in store


def test_a_value_is_sized_by_its_arrays_unless_told():
    store = compute.ByteBudgetCache(10_000_000)
    array = np.zeros((100, 100), dtype=np.float32)
    compute.cached(store, "k", lambda: {"weights": array, "tokens": ["a", "b"]})
    assert array.nbytes < store.nbytes < array.nbytes + 1_000


def _session_script(name: str, key: str) -> None:
    import streamlit as st

    from ui import compute, session

    session.add_upload("upload: same-name.pt", object())  # each session's own file of the same name
    upload = compute.compute("probe", key, lambda: name, model="upload: same-name.pt")
    bundled = compute.compute("probe", key, lambda: name, model="imdb-sentiment")
    st.write(f"{upload}|{bundled}")


def test_an_upload_result_is_never_returned_to_another_session():
    key = uuid.uuid4().hex  # the shared store outlives a test: a key of its own
    first = AppTest.from_function(_session_script, args=("first", key), default_timeout=30)
    second = AppTest.from_function(_session_script, args=("second", key), default_timeout=30)
    first.run()
    second.run()
    assert not first.exception and not second.exception
    assert first.markdown[0].value == "first|first"
    # the same upload name in another session is computed for that session; a bundled model's value is shared
    assert second.markdown[0].value == "second|first"


def test_a_nested_computation_keeps_its_one_slot():
    done = []

    def nested(depth: int) -> int:
        if depth == 0:
            return 0
        return compute.cached(compute.ByteBudgetCache(1_000), depth, lambda: nested(depth - 1) + 1)

    worker = threading.Thread(target=lambda: done.append(nested(work_slots.SLOTS + 2)))
    worker.start()
    worker.join(timeout=20)
    assert done == [work_slots.SLOTS + 2]  # deeper than the slots there are, and no deadlock


def test_a_classifier_attribution_runs_inside_an_analysis_slot(monkeypatch):
    from transformer.text import attribution

    entered, inside = [], []
    slot = work_slots.analysis_slot

    @contextlib.contextmanager
    def counted_slot(expected_bytes: int = 0):
        entered.append(expected_bytes)
        with slot(expected_bytes) as use:
            yield use

    def attribute(*args, **kwargs):
        inside.append(work_slots.holding_slot())
        return real_attribute(*args, **kwargs)

    real_attribute = attribution.attribute
    monkeypatch.setattr(work_slots, "analysis_slot", counted_slot)
    monkeypatch.setattr(attribution, "attribute", attribute)
    sentence = f"an odd little film number {uuid.uuid4().int % 10_000}"  # not in the shared store yet
    at = open_app("classifier", text=sentence)
    # the sentence's attribution (and the comparison's two, unless an earlier test left them in the store)
    assert inside and all(inside)
    assert len(entered) >= 4  # batch predictions, ids, attribution, heads on/off, comparison: each in a slot
    assert list(at.dataframe[0].value["text"]) == [sentence]
