"""AppTest of the Similarity page: the real sentence encoder by default, its matrix equal to the core's
numbers, the token matches of the most alike pair, Korean, another model, and bad input (one
sentence, 50 sentences, empty lines, a 5,000-character sentence)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app_helpers import array, figures, open_app, texts
from ui.similarity import EXAMPLES, MAX_SENTENCES, SENTENCE_ENCODER, split_sentences

from .test_similarity import BUNDLED

pytestmark = pytest.mark.skipif(
    not (BUNDLED / "model.safetensors").is_file(), reason="assets/models/all-minilm-l6-v2 is not here"
)


def matrix(at) -> np.ndarray:
    return array(figures(at)["similarity-matrix"]["data"][0]["z"])


def test_split_sentences_counts_what_it_leaves_out():
    parts = split_sentences("one\r\n\n  \ntwo\nthree\n", limit=2)
    assert parts.kept == ["one", "two"] and parts.given == 3 and parts.cut == 1 and parts.empty == 2
    assert split_sentences("a\nb").empty == 0 and split_sentences("").kept == []


def test_the_real_encoder_compares_the_example_sentences():
    from transformer import load_model, read_recipe, sentence_similarity

    at = open_app("similarity")
    assert at.title[0].value == "Sentence similarity"
    assert at.selectbox(key="sim_model").value == SENTENCE_ENCODER
    about = at.markdown[0].value
    assert "6 layers × 12 heads" in about and "billion sentence pairs" in about and "English only" in about
    shown = matrix(at)
    assert shown.shape == (5, 5)
    assert figures(at)["similarity-matrix"]["data"][0]["texttemplate"] == "%{z:.2f}"  # values in the cells
    expected = sentence_similarity(load_model(BUNDLED, "cpu"), list(EXAMPLES), read_recipe(BUNDLED)).similarity
    np.testing.assert_allclose(shown, expected, atol=1e-6)
    assert shown[0, 1] > 0.6 and shown[2, 3] > 0.5 and shown[0, 2] < 0.1  # guitars; falling prices
    assert any("Most alike: sentences 1 and 2" in c for c in texts(at.caption))
    # the token view starts on the most alike pair, [CLS]/[SEP] left out
    first, second = (next(s for s in at.selectbox if s.key.startswith(f"sim_{x}_")) for x in "ab")
    assert (first.value, second.value) == (0, 1)
    table = at.dataframe[0].value
    assert table.iloc[:, 0].tolist() == ["a", "man", "is", "playing", "a", "guitar", "on", "stage", "."]
    assert table.set_index("Token").loc["guitar"].tolist()[0] == "guitar"
    tokens = figures(at)["similarity-tokens"]
    assert array(tokens["data"][0]["z"]).shape == (9, 7)  # "someone performs music with a guitar ."
    at.toggle(key="sim_words").set_value(False).run()
    assert array(figures(at)["similarity-tokens"]["data"][0]["z"]).shape == (11, 9)
    second.set_value(3).run()
    assert figures(at)["similarity-tokens"]["layout"]["title"]["text"].endswith("sentence 4")
    assert not at.exception


def test_korean_page_and_a_model_not_trained_for_similarity():
    at = open_app("similarity", lang="ko")
    assert at.title[0].value == "문장 유사도 (Similarity)"
    assert "영어만" in at.markdown[0].value and "10억" in at.markdown[0].value
    assert figures(at)["similarity-matrix"]["layout"]["title"]["text"] == "문장 5개의 코사인 유사도"
    others = [o for o in at.selectbox(key="sim_model").options if o != SENTENCE_ENCODER]
    if others:
        at.selectbox(key="sim_model").set_value("imdb-sentiment" if "imdb-sentiment" in others else others[0]).run()
        assert "분류하도록 학습된" in at.markdown[0].value
        assert matrix(at).shape == (5, 5)
    assert not at.exception


def test_bad_input_gets_a_message_or_a_bounded_result():
    at = open_app("similarity")

    def box():  # the text area of the latest run (an element of an earlier run holds stale widget states)
        return at.text_area(key="sim_text")

    box().set_value("only one sentence here").run()
    assert any("at least two sentences" in m for m in texts(at.info))
    assert "similarity-matrix" not in figures(at)
    box().set_value("\n".join(f"Sentence number {i} is about topic {i % 7}." for i in range(50))).run()
    assert any(f"first {MAX_SENTENCES} of your 50" in w for w in texts(at.warning))
    assert matrix(at).shape == (MAX_SENTENCES, MAX_SENTENCES)
    # 20 columns: 16-pixel values would not fit a cell, so only hovering gives them
    assert figures(at)["similarity-matrix"]["data"][0].get("texttemplate") is None
    box().set_value("\n\nThe cat sleeps.\n\n\nA dog runs.\n\n").run()
    assert any("5 empty line(s) skipped" in c for c in texts(at.caption))
    assert matrix(at).shape == (2, 2)
    long = ("The plot moves slowly but the ending is worth the wait. " * 90)[:5000]
    box().set_value(f"A short sentence.\n{long}").run()
    assert any("first 256 tokens" in w and "sentence(s) 2" in w for w in texts(at.warning))
    assert matrix(at).shape == (2, 2)
    assert not at.exception


def test_korean_says_first_that_every_encoder_is_english_and_two_sentences_name_one_pair():
    """Issue 50, items 3 and 5: in Korean the English-only note comes before the sentence box; with two
    sentences the one pair is named once, not as both the most and the least alike."""
    at = open_app("similarity", lang="ko")
    first_info = next(i for i in at.info)
    assert "영어만" in first_info.value and "all-MiniLM-L6-v2" in first_info.value
    main = list(at.main)
    assert main.index(first_info) < main.index(at.text_area(key="sim_text"))
    at.text_area(key="sim_text").set_value("고양이가 잔다.\nThe cat sleeps.").run()
    captions = texts(at.caption)
    assert any(c.startswith("1번과 2번 문장의 유사도: ") for c in captions), captions
    assert not any("가장 다른" in c for c in captions)
    english = open_app("similarity")
    assert not any("learned English only (all-MiniLM" in i for i in texts(english.info))
    english.text_area(key="sim_text").set_value("A cat sleeps.\nThe dog runs.").run()
    assert any(c.startswith("Sentences 1 and 2: similarity ") for c in texts(english.caption))
    assert not any("Least alike" in c for c in texts(english.caption))


def test_a_paste_over_the_box_limit_is_cut_with_the_links_message():
    from ui.similarity import MAX_CHARS

    at = open_app("similarity")
    pasted = "A cat sleeps on the warm sofa.\nThe dog runs in the park.\n" + "x" * MAX_CHARS
    at.text_area(key="sim_text").set_value(pasted).run()
    assert any(f"{len(pasted):,}" in w and f"{MAX_CHARS:,}" in w for w in texts(at.warning)), texts(at.warning)
    assert matrix(at).shape == (3, 3)  # the two sentences and the cut third line
