"""AppTest of the Translate page: the greedy translation, the figures and their numbers, Korean,
the dates model, unknown words, forcing a token and switching heads off."""

from __future__ import annotations

import numpy as np

from tests.app_helpers import array, figures, open_app, texts
from transformer.translation import get_task

EXAMPLE = get_task("word-order").examples()[0]
KOREAN = "오늘 빨간 고양이는 집에서 큰 편지를 읽는다"  # written as Korean: particles on their nouns
TOKENS = " ".join(EXAMPLE.target)  # as the model produces them: 오늘 빨간 고양이 는 집 에서 큰 편지 를 읽는다


def markdown(at) -> str:
    return "\n".join(texts(at.markdown))


def test_translate_page_shows_the_translation_and_its_attention():
    at = open_app("translate")
    assert at.title[0].value == "Translate"
    assert f"### {KOREAN}" in texts(at.markdown)
    assert any("✓ The expected translation" in c for c in texts(at.caption))
    figs = figures(at)
    assert {
        "translate-cross",
        "translate-head-scores",
        "translate-self",
        "translate-cross-row",
        "translate-topk",
    } <= set(figs)
    cross = figs["translate-cross"]
    z = array(cross["data"][0]["z"])
    assert z.shape == (len(EXAMPLE.target) + 1, len(EXAMPLE.source))  # one row per written token, <eos> too
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-4)
    gold = cross["data"][1]
    assert len(gold["x"]) == sum(a is not None for a in EXAMPLE.alignment)
    assert cross["layout"]["font"]["size"] >= 16 and cross["layout"]["font"]["color"] == "#111111"
    scores = array(figs["translate-head-scores"]["data"][0]["z"])
    assert scores.shape == (2, 4) and scores.max() >= 0.85
    # the step view opens at the last word, the verb: the prefix is <bos> + 9 words, and the best
    # head (preselected) looks back at "reads", the fourth source word
    n = len(EXAMPLE.target)
    assert figs["translate-self"]["data"][0]["z"] is not None
    assert array(figs["translate-self"]["data"][0]["z"]).shape == (n, n)
    assert any(m.startswith("Written: **읽는다**") for m in texts(at.markdown))
    assert int(np.argmax(array(figs["translate-cross-row"]["data"][0]["y"]))) == EXAMPLE.source.index("reads")


def test_last_step_shows_the_look_ahead_mask():
    at = open_app("translate")
    slider = at.slider(key="tr_step")
    slider.set_value(slider.max).run()
    z = array(figures(at)["translate-self"]["data"][0]["z"]).astype(float)
    n = len(EXAMPLE.target) + 1
    assert z.shape == (n, n)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    assert np.isnan(z[upper]).all() and not np.isnan(z[~upper]).any()
    np.testing.assert_allclose(z[~upper].reshape(-1).sum(), n, atol=1e-3)  # each row sums to 1


def test_forcing_a_noun_changes_the_particle_after_it():
    at = open_app("translate")
    at.toggle(key="tr_force").set_value(True).run()
    at.number_input(key="tr_force_step").set_value(3)
    at.selectbox(key="tr_force_token").set_value("곰").run()
    assert not at.exception
    assert "오늘 빨간 곰은" in markdown(at)
    assert any(KOREAN in c for c in texts(at.caption))  # the unforced output, for comparison


def test_dates_model_and_unknown_words():
    at = open_app("translate")
    at.radio(key="tr_model").set_value("dates").run()
    assert "### 2018\\-05\\-09" in texts(at.markdown)
    at.text_input(key="tr_text").set_value("the 3rd of smarch 2020").run()
    assert any("smarch" in w for w in texts(at.warning))
    at.text_input(key="tr_text").set_value(" ".join(["may"] * 70)).run()
    assert any("the last 6 were cut off" in w for w in texts(at.warning))


def test_korean_page():
    at = open_app("translate", lang="ko")
    assert at.title[0].value == "번역 (Translate)"
    assert "교차 어텐션" in figures(at)["translate-cross"]["layout"]["title"]["text"]


def test_switching_every_cross_attention_head_off_changes_the_output():
    at = open_app("translate")
    heads = at.multiselect(key="tr_heads_off")
    heads.set_value(list(heads.options)).run()
    assert not at.exception
    output = next(m for m in texts(at.markdown) if m.startswith("Output with these settings"))
    assert KOREAN not in output
    assert any(KOREAN in c for c in texts(at.caption))


def test_a_shared_link_opens_the_same_model_and_sentence():
    at = open_app("translate", tr_model="dates", tr_text="july 20 , 1969")
    assert at.radio(key="tr_model").value == "dates"
    assert "### 1969\\-07\\-20" in texts(at.markdown)


def force_end_of_sentence_first(at):
    """Force <eos> at step 1: the output is one token, so decoding has a single step."""
    at.toggle(key="tr_force").set_value(True).run()
    at.number_input(key="tr_force_step").set_value(1)
    at.selectbox(key="tr_force_token").set_value("<eos>").run()
    return at


def test_forcing_a_one_step_output_shows_that_step_without_an_error():
    at = force_end_of_sentence_first(open_app("translate"))
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    assert not [s for s in at.slider if s.key == "tr_step"]  # nothing to slide over
    assert any("One step only" in c for c in texts(at.caption))
    assert "translate-topk" in figures(at)
    at.toggle(key="tr_force").set_value(False).run()  # back to the full translation: the slider returns
    assert not at.exception and at.slider(key="tr_step").max == len(EXAMPLE.target) + 1


def test_next_and_previous_move_the_decoding_step():
    at = open_app("translate")
    start = at.slider(key="tr_step").value
    at.button(key="tr_step_previous").click().run()
    assert at.slider(key="tr_step").value == start - 1
    at.button(key="tr_step_next").click().run()
    at.button(key="tr_step_next").click().run()
    assert at.slider(key="tr_step").value == start + 1
    assert at.button(key="tr_step_next").disabled  # the last step


def test_a_one_value_slider_is_a_caption_not_an_error():
    from streamlit.testing.v1 import AppTest

    def app():
        import streamlit as st

        from ui.steps import bounded_slider

        st.session_state["n"] = 5  # remembered from a longer input
        st.write(bounded_slider(st, "Tokens", 1, 1, 1, key="n"))
        st.write(bounded_slider(st, "Window", 1, 8, 3, key="w"))

    at = AppTest.from_function(app).run()
    assert not at.exception
    assert [c.value for c in at.caption] == ["Tokens: 1 (the only possible value)"]
    assert [s.key for s in at.slider] == ["w"] and at.slider[0].value == 3


def test_the_page_model_radio_is_the_only_model_picker():
    at = open_app("translate")
    styles = "\n".join(el.proto.body for el in at.get("html"))
    assert '[data-testid="stSidebar"] .st-key-model' in styles and "display: none" in styles
    assert at.radio(key="tr_model").value == "en-ko-order"


def test_the_sentence_is_written_as_korean_and_the_token_views_keep_the_tokens():
    assert get_task("word-order").written(EXAMPLE.target) == KOREAN
    at = open_app("translate")
    assert f"### {KOREAN}" in texts(at.markdown) and f"### {TOKENS}" not in texts(at.markdown)
    rows = [str(label).split(":", 1)[1] for label in figures(at)["translate-cross"]["data"][0]["y"]]
    assert " ".join(rows[:-1]) == TOKENS  # one row per token as produced: the particles stay tokens
