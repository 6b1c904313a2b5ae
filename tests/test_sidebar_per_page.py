"""The sidebar shows the text-model picker and the length slider only on the pages that read them."""

from __future__ import annotations

import pytest

from tests.app_helpers import open_app
from ui.sidebar import uses_text_model

TEXT_PAGES = ["playground", "attention", "positional_encoding", "masks", "classifier", "checkpoints"]
OWN_MODEL_PAGES = ["generate", "head_atlas", "fill_mask", "similarity", "translate", "vision", "residual"]


def sidebar_keys(at) -> set[str]:
    """The keys of the widgets drawn in the sidebar."""
    keys = set()
    for kind in ("selectbox", "slider", "radio", "toggle"):
        keys |= {w.key for w in at.sidebar.get(kind) if w.key}
    return keys


@pytest.mark.parametrize("page", TEXT_PAGES)
def test_text_pages_show_the_model_and_its_length(page):
    at = open_app(page, lang="en")
    assert {"model", "max_len", "device"} <= sidebar_keys(at), sidebar_keys(at)


@pytest.mark.parametrize("page", OWN_MODEL_PAGES)
def test_other_pages_leave_the_text_model_and_its_length_out(page):
    at = open_app(page, lang="en")
    keys = sidebar_keys(at)
    assert "device" in keys and not {"model", "max_len"} & keys, keys
    assert not any("imdb-sentiment" in m.value for m in at.sidebar.markdown)


def test_the_start_page_shows_no_model_controls():
    at = open_app(None, lang="en")
    at.switch_page("pages/start.py").run()
    assert not {"model", "max_len"} & sidebar_keys(at)
    assert uses_text_model("attention") and not uses_text_model("") and not uses_text_model("generate")


def test_the_model_and_length_chosen_survive_a_page_without_them():
    at = open_app("attention", lang="en")
    other = "imdb-sst2-sentiment"
    at.selectbox(key="model").select(other).run()
    at.slider(key="max_len").set_value(7).run()
    at.switch_page("pages/generate.py").run()
    assert not at.exception and at.session_state["selection"].model_key == other
    at.switch_page("pages/head_atlas.py").run()
    at.switch_page("pages/classifier.py").run()
    assert not at.exception
    assert at.selectbox(key="model").value == other and at.slider(key="max_len").value == 7
