"""AppTest of the Playground page, and the escaping its token chips rely on."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transformer import analyze, load_model
from transformer.bundle import load_bundle, save_bundle
from transformer.core.model import SequenceClassifier
from transformer.text.calibration import softmax
from ui.figures.classifier import class_colours
from ui.markdown import md_escape, token_chips
from ui.models import (
    CACHE_BYTES,
    REQUEST_TOKENS,
    ByteBudgetCache,
    analysis_nbytes,
    check_request_size,
    result_nbytes,
)
from ui.text import example_entries, examples

from .app_helpers import MODEL, figures, open_app, texts
from .conftest import tiny_config


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
    calibrated = softmax(result.logits, loaded.config.temperature).max(axis=1)  # the model's stored temperature
    np.testing.assert_allclose(frame["probability"], calibrated, atol=1e-5)
    assert loaded.config.temperature > 1 and (calibrated < result.raw_probabilities.max(axis=1)).all()
    assert list(frame["tokens"]) == [4, 4, 5]
    assert [m.value for m in at.metric] == [result.predicted_label(i) for i in range(3)]
    assert any("Ran on **CPU**" in c and "**calibrated**" in c for c in texts(at.caption))


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
    at.button(key="example_batch").click().run()  # in the Examples popover
    assert at.text_area(key="text").value == examples()["batch"]
    assert len(table(at)) == 3


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n"])
def test_empty_input_asks_for_a_sentence(text):
    at = open_app("playground", text="x")
    at.text_area(key="text").input(text).run()
    assert not at.exception and not at.dataframe
    assert any("Type a sentence" in m for m in texts(at.info))


@pytest.mark.parametrize(
    "text, why",
    [
        ("영화가 정말 좋았어요", "not a language it reads"),
        ("😀🎬🍿", "no words to read"),
        ("הסרט היה מצוין", "not a language it reads"),
        ("الفيلم كان رائعا", "not a language it reads"),
    ],
)
def test_text_the_model_cannot_read_gets_no_headline_prediction(text, why):
    at = open_app("playground", text=text)
    assert len(table(at)) == 1 and table(at)["unknown"].iloc[0] == table(at)["tokens"].iloc[0]
    assert table(at)["prediction"].tolist() == [why] and table(at)["probability"].isna().all()
    assert not at.metric  # no big headline
    assert any("the model's answer says nothing" in w or "its answer says nothing" in w for w in texts(at.warning))
    assert any("bars" in key for key in plotly_keys(at))  # the numbers are still there, below


def test_in_korean_the_page_speaks_korean():
    # the English model cannot read Korean and says so; the Korean interface's own model can (issue 25)
    at = open_app("playground", text="영화가 정말 좋았어요", lang="ko", model="imdb-sentiment")
    assert at.title[0].value == "플레이그라운드"
    assert any("모델이 읽는 언어로 쓴 글이 아닙니다" in w for w in texts(at.warning))
    at = open_app("playground", text="영화가 정말 좋았어요", lang="ko")
    assert not at.warning and at.metric[0].value in ("긍정", "부정")


def plotly_keys(at) -> list[str]:
    return [el.proto.id for el in at.get("plotly_chart")]


def test_examples_the_model_gets_wrong_say_so(loaded):
    entries = example_entries()
    for key in ("sarcasm", "contrast", "negation"):
        at = open_app("playground", text=entries[key]["text"])
        result = analyze(loaded, [entries[key]["text"]], at.session_state["selection"].max_len)
        wrong = result.predicted_label(0) != entries[key]["labels"][0]
        assert any("model misreads this" in w for w in texts(at.warning)) == wrong, key


def test_probability_bars_use_one_colour_per_class():
    at = open_app("playground", text="i loved this film\nthe plot was boring")
    bars = [f for name, f in figures(at).items() if name == "probability-bars"]
    assert bars
    colours = figures(at)["probability-bars"]["data"][0]["marker"]["color"]
    assert colours == [class_colours(["negative", "positive"])[n] for n in ("negative", "positive")]
    assert colours[0] != colours[1]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize(
    ("names", "probs"), [(["negative", "positive"], [0.3, 0.7]), (["a", "b", "c"], [0.1, 0.2, 0.7])]
)
def test_probability_bars_fast_build_equals_the_validated_one(names, probs, lang):
    from ui.figures import classifier as classifier_module
    from ui.figures.common import legible

    for calibrated in (True, False):
        fast = classifier_module.probability_bars(names, np.array(probs), calibrated, lang)
        slow = classifier_module._probability_bars_validated(names, np.array(probs), calibrated, lang)
        assert json.dumps(fast.to_plotly_json(), default=list, sort_keys=True) == json.dumps(
            slow.to_plotly_json(), default=list, sort_keys=True
        )
        big = json.dumps(
            legible(fast, 1.5).to_plotly_json(), default=list, sort_keys=True
        )  # presenter fonts apply to it too
        assert big == json.dumps(legible(slow, 1.5).to_plotly_json(), default=list, sort_keys=True)


def test_many_long_lines_run_within_the_token_budget_and_say_so(loaded):
    long_line = " ".join(["a"] * 1_100)  # 2,200 characters: 35 such lines stay within the box limit
    count = REQUEST_TOKENS // loaded.config.default_max_tokens + 3
    at = open_app("playground", text="\n".join([long_line] * count))
    kept = REQUEST_TOKENS // loaded.config.default_max_tokens
    assert len(table(at)) == kept
    assert any(f"first {kept} of {count} lines" in w for w in texts(at.warning))


def test_a_model_with_nan_weights_gives_a_clear_message(tmp_path, tiny_vocab):
    loaded = nan_model(tmp_path, tiny_vocab)
    key = "upload: nan.safetensors"
    at = open_app("playground", uploads={key: loaded}, chosen=key, by_link=True, text="the movie was great")
    assert any("not a number" in e for e in texts(at.error))
    assert table(at)["prediction"].tolist() == ["—"] and not at.metric


def nan_model(tmp_path, vocab):
    torch.manual_seed(0)
    config = tiny_config(vocab_size=len(vocab), pad_id=vocab.pad_id)
    model = SequenceClassifier(config).eval()
    with torch.no_grad():
        model.encoder.embedding.tokens.weight.fill_(float("nan"))
    return load_bundle(save_bundle(tmp_path / "nan", model, config, vocab, metrics={}))


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


def test_the_result_cache_is_bounded_by_bytes_least_recently_used_first():
    cache = ByteBudgetCache(100)
    cache.put("a", 1, 40)
    cache.put("b", 2, 40)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 40)
    assert list(cache) == ["a", "c"] and cache.nbytes == 80 and cache.get("b") is None
    cache.put("huge", 4, 101)  # larger than the whole budget: not kept
    assert "huge" not in cache and cache.nbytes == 80
    del cache["a"]
    assert list(cache) == ["c"] and cache.nbytes == 40


def test_an_analysis_is_counted_by_its_arrays_and_its_size_is_known_before_running(loaded):
    texts = ["the movie was great", "a long and boring film with a weak plot"]
    result = analyze(loaded, texts, 64)
    kept = result.attention.nbytes + result.queries.nbytes + result.keys.nbytes  # scores: computed when read
    assert result_nbytes(result) >= kept
    assert analysis_nbytes(loaded, texts, 64) == kept
    assert CACHE_BYTES == 256 * 1_000_000  # the documented default


def test_one_analysis_request_is_refused_with_a_message_when_too_large(loaded):
    review = " ".join(["a"] * 1_100)
    check_request_size(loaded, [review] * 5, 1024)  # five full-length reviews run (35 MB each)
    with pytest.raises(ValueError, match=r"these 6 lines would take 208 MB, more than the 200 MB"):
        check_request_size(loaded, [review] * 6, 1024)


def test_probability_figures_are_built_once_per_inputs_and_language(monkeypatch):
    """The Playground keeps each probability figure by (classes, probabilities, calibrated, language):
    the same sentence again is drawn from the cache, the same figure; another sentence or language is built anew."""
    import ui.figures.classifier as classifier_figures

    built = []
    real = classifier_figures.probability_bars

    def counting(*args, **kwargs):
        built.append(args[-1])
        return real(*args, **kwargs)

    monkeypatch.setattr(classifier_figures, "probability_bars", counting)
    first, other = "a sentence for the figure cache test, 4417", "a different sentence , 4417 , boring"
    at = open_app("playground", text=first)
    figure = figures(at)["probability-bars"]
    assert len(built) == 1
    at.text_area(key="text").input(first + " ").run()  # the same line once split: the same inputs
    assert len(built) == 1 and figures(at)["probability-bars"] == figure
    at.text_area(key="text").input(other).run()
    changed = figures(at)["probability-bars"]
    assert len(built) == 2 and changed["data"][0]["x"] != figure["data"][0]["x"]
    at.text_area(key="text").input(first).run()
    assert len(built) == 2 and figures(at)["probability-bars"] == figure
    at.query_params["lang"] = "ko"
    at.session_state["_lang"] = "ko"
    at.run()
    korean = figures(at)["probability-bars"]
    assert built[-1] == "ko" and korean["layout"]["title"]["text"] != figure["layout"]["title"]["text"]


def test_table_writes_each_prediction_in_its_class_colour_and_the_bars_in_grey():
    at = open_app("playground", text="what a great film\nterrible boring mess")
    frame = at.dataframe[0].value
    styles = at.dataframe[0].proto.arrow_data.styler.styles
    colours = class_colours(["negative", "positive"])
    column = list(frame.columns).index("prediction")  # the styler counts data columns from 0
    for row, label in enumerate(frame["prediction"]):
        assert f"row{row}_col{column} {{ color: {colours[label]}" in styles
    bar = json.loads(at.dataframe[0].proto.columns)["probability"]
    assert bar["type_config"]["color"] == "#6b7280"
