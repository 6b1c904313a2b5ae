"""AppTest of the Playground page, and the escaping its token chips rely on."""

from __future__ import annotations

import numpy as np
import pytest

from transformer import analyze, load_model
from ui.markdown import md_escape, token_chips
from ui.text import examples

from .app_helpers import MODEL, open_app, texts


@pytest.fixture(scope="module")
def loaded():
    return load_model(MODEL)


def table(at):
    return at.dataframe[0].value


def test_each_sentence_gets_a_prediction_with_its_probability(loaded):
    lines = ["i loved this film", "the plot was boring", "not good , not bad"]
    at = open_app("playground", text="\n".join(lines))
    frame = table(at)
    result = analyze(loaded, lines, at.session_state["selection"].max_len)
    assert list(frame["sentence"]) == lines
    assert list(frame["prediction"]) == [result.predicted_label(i) for i in range(3)]
    np.testing.assert_allclose(frame["probability"], result.probabilities.max(axis=1), atol=1e-6)
    assert list(frame["tokens"]) == [4, 4, 5]
    assert [m.value for m in at.metric] == [result.predicted_label(i) for i in range(3)]
    assert any("Ran on **CPU**" in c for c in texts(at.caption))


def test_unknown_words_are_marked_and_the_table_counts_them():
    at = open_app("playground", text="the zzqxv movie")
    assert table(at)["unknown"].tolist() == [1]
    chips = [m for m in texts(at.markdown) if "background[" in m and "known word" not in m]
    assert chips == [":blue-background[the] :orange-background[zzqxv] :blue-background[movie]"]


def test_ten_thousand_words_are_cut_and_say_so(loaded):
    kept = loaded.config.default_max_tokens  # the sidebar's default maximum length
    at = open_app("playground", text=" ".join(["good"] * 10_000))
    assert table(at)["cut off"].tolist() == [10_000 - kept]
    assert any("10,000 tokens" in w and f"first {kept:,}" in w for w in texts(at.warning))
    assert any(f"{10_000 - kept:,} more tokens cut off" in m for m in texts(at.markdown))


def test_example_button_fills_the_box():
    at = open_app("playground")
    at.button(key="example_batch").click().run()
    assert at.text_area(key="text").value == examples()["batch"]
    assert len(table(at)) == 3


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n"])
def test_empty_input_asks_for_a_sentence(text):
    at = open_app("playground", text="x")
    at.text_area(key="text").input(text).run()
    assert not at.exception and not at.dataframe
    assert any("Type a sentence" in m for m in texts(at.info))


@pytest.mark.parametrize("text", ["영화가 정말 좋았어요", "😀🎬🍿", "הסרט היה מצוין", "الفيلم كان رائعا"])
def test_words_the_model_does_not_know_give_a_result_and_a_warning(text):
    at = open_app("playground", text=text)
    assert len(table(at)) == 1 and table(at)["unknown"].iloc[0] == table(at)["tokens"].iloc[0]
    assert any("None of these words" in w for w in texts(at.warning))


def test_html_and_javascript_are_shown_literally():
    text = "<script>alert('x')</script> <b>great</b> **bold** :red[x] $x$"
    at = open_app("playground", text=text)
    assert table(at)["sentence"].iloc[0] == text
    quoted = [m for m in texts(at.markdown) if m.startswith("> ")]
    assert quoted == ["> " + md_escape(text)]
    assert "<script>" not in quoted[0] and "\\<script\\>" in quoted[0]


def test_md_escape_escapes_every_markup_character():
    assert md_escape("<b>x</b>") == "\\<b\\>x\\<\\/b\\>"
    assert md_escape(":red[x] **y** $z$") == "\\:red\\[x\\] \\*\\*y\\*\\* \\$z\\$"
    assert md_escape("line one\nline two") == "line one line two"
    assert md_escape("영화 😀") == "영화 😀"


def test_token_chips_colour_unknown_and_cut_tokens():
    assert token_chips(["a", "<b>"], [False, True], cut=1) == (
        ":blue-background[a] :orange-background[\\<b\\>] :gray-background[… 1 more token cut off]"
    )
    with pytest.raises(ValueError, match="2 tokens but 1"):
        token_chips(["a", "b"], [False])


def test_a_very_long_input_is_quoted_only_in_part():
    at = open_app("playground", text=" ".join(["good"] * 10_000))
    (quote,) = [m for m in texts(at.markdown) if m.startswith("> ")]
    assert quote.endswith(f"… ({5 * 10_000 - 1 - 600:,} more characters)") and len(quote) < 1_000
