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
    from ui import classifier_runs

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

    real_attribute = classifier_runs.attribute
    monkeypatch.setattr(work_slots, "analysis_slot", counted_slot)
    monkeypatch.setattr(classifier_runs, "attribute", attribute)  # where the page's runs call it
    sentence = f"an odd little film number {uuid.uuid4().int % 10_000}"  # not in the shared store yet
    at = open_app("classifier", text=sentence)
    # the sentence's attribution (and the comparison's two, unless an earlier test left them in the store)
    assert inside and all(inside)
    # predictions, the attribution and heads on/off each in a slot (the comparison's too, unless already stored)
    assert len(entered) >= 3
    assert list(at.dataframe[0].value["text"]) == [sentence]


def _upload_paths_script(zeroed: bool, image_seed: int) -> None:
    """Each session uploads its own copy of the digit ViT and the dates translator under the same
    names; ``zeroed`` zeroes its weights (uniform probabilities and attention)."""
    import numpy as np
    import streamlit as st
    import torch

    from transformer import load_bundle
    from transformer.vision import load_vision_bundle
    from ui import session
    from ui.models import MODELS_DIR
    from ui.translation_models import cross_attention, source_tokens
    from ui.vision_models import analyze_vision

    vision = load_vision_bundle(MODELS_DIR / "vit-digits", torch.device("cpu"))
    translator = load_bundle(MODELS_DIR / "dates", torch.device("cpu"))
    for model in (vision.model, translator.model) if zeroed else ():
        for weight in model.parameters():
            weight.data.zero_()
    session.add_upload("upload: vit.pt", vision)
    session.add_upload("upload: dates.pt", translator)
    image = np.random.default_rng(image_seed).random((1, 1, 32, 32), dtype=np.float32)
    probabilities = analyze_vision("upload: vit.pt", "cpu", image).probabilities[0]
    _, ids, _, _ = source_tokens("upload: dates.pt", "cpu", "march 3 , 2001")
    start = translator.config.bos_id
    cross = cross_attention("upload: dates.pt", "cpu", tuple(ids), (start, start + 2, start + 3))
    st.write(f"{probabilities.max():.4f}|{cross.std():.4f}")


def test_an_upload_vision_analysis_or_translation_stays_in_its_session():
    seed = uuid.uuid4().int % 1_000_000  # a picture no earlier test analysed
    trained = AppTest.from_function(_upload_paths_script, args=(False, seed), default_timeout=60)
    zeroed = AppTest.from_function(_upload_paths_script, args=(True, seed), default_timeout=60)
    trained.run()
    zeroed.run()
    assert not trained.exception and not zeroed.exception
    top, spread = trained.markdown[0].value.split("|")
    assert float(top) > 0.1 and float(spread) > 0  # the trained copy is sure of something
    assert zeroed.markdown[0].value == "0.1000|0.0000"  # its own zeroed copy: not the first session's values
