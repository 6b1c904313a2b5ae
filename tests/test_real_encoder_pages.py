"""The real pretrained encoder (assets/models/all-minilm-l6-v2) in the model picker of the text pages: it runs on
each of them, and the sidebar says what it is, in both languages."""

from __future__ import annotations

import pytest

from tests.app_helpers import open_app

REAL = "all-minilm-l6-v2"
PAGES = ["playground", "attention", "positional_encoding", "masks"]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("page", PAGES)
def test_the_real_encoder_runs_on_the_text_pages_and_says_what_it_is(page, lang):
    at = open_app(page, lang=lang)
    assert REAL in at.selectbox(key="model").options
    at.selectbox(key="model").select(REAL).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    about = " ".join(c.value for c in at.sidebar.caption)
    assert "sentence-transformers/all-MiniLM-L6-v2" in about.replace("\\", "")
    words = ("6 layers × 12 heads", "English only") if lang == "en" else ("6개 레이어 × 12개 헤드", "영어만")
    assert all(w in about for w in words), about


def test_our_own_models_carry_no_such_note():
    at = open_app("attention", lang="en")
    at.selectbox(key="model").select("imdb-sentiment").run()
    assert not any("pretrained encoder" in c.value for c in at.sidebar.caption)
