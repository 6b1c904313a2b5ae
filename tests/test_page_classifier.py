"""AppTest of the Classifier page: batch table, attributions, head switch-off, comparison, bad input."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_helpers import array, open_app
from tests.app_helpers import figures as figures_by_meta
from ui.classifier import WHOLE_LAYER

APP = str(Path(__file__).resolve().parent.parent / "streamlit_app.py")


def open_page(text: str | None = 'the movie was great\nit was not good\n""') -> AppTest:
    return open_app("classifier", **({} if text is None else {"text": text}))


def figures(at: AppTest) -> dict[str, dict]:
    """Plotly figures on the page by title."""
    out = {}
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        out[spec["layout"].get("title", {}).get("text", "")] = spec
    return out


def metric(at: AppTest, starts: str):
    return next(m for m in at.metric if m.label.startswith(starts))


@pytest.fixture(scope="module")
def page() -> AppTest:
    return open_page()


def test_batch_table_lists_each_sentence_and_reports_empty_lines(page):
    table = page.dataframe[0].value
    assert list(table["text"]) == ["the movie was great", "it was not good"]
    assert list(table["tokens"]) == [4, 4]
    assert set(table["label"]) <= {"negative", "positive"}
    assert ((table["probability"] >= 0.5) & (table["probability"] <= 1)).all()
    assert any("line 3" in w.value and "no words" in w.value for w in page.warning)
    assert page.get("download_button")


def test_attribution_view_shows_three_scores_per_token(page):
    figs = figures(page)
    for title in ("Attention rollout", "Gradient × input", "Integrated gradients"):
        chips = figs[title]["data"][0]["text"]
        assert chips == ["the", "movie", "was", "great"]
        bars = figs[f"{title} per token"]["data"][0]
        assert bars["x"] == ["0:the", "1:movie", "2:was", "3:great"]
    captions = " ".join(c.value for c in page.caption)
    assert "50 steps" in captions and "completeness error" in captions
    assert any("Spearman" in i.value for i in page.info)


def test_switching_a_layer_off_changes_the_probability_shown():
    at = open_page("the movie was great")
    before = next(m for m in at.metric if " off" in m.label)
    assert "0 head(s) and 0 layer(s) off" in before.label and before.delta == "+0.0000"
    at.pills(key="classifier_off_0").set_value([WHOLE_LAYER]).run()
    after = next(m for m in at.metric if " off" in m.label)
    assert "1 layer(s) off" in after.label
    assert after.value != before.value and after.delta != "+0.0000"
    at.pills(key="classifier_off_1").set_value([2]).run()
    assert "1 head(s) and 1 layer(s) off" in next(m for m in at.metric if " off" in m.label).label
    at.button(key="classifier_rank").click().run()
    heat = next(spec for title, spec in figures(at).items() if title.startswith("Change of p("))
    change = array(heat["data"][0]["z"])
    assert change.shape == (2, 4 + 1)  # layers × (heads + whole layer)
    assert change[0, 4] == pytest.approx(float(after.value) - float(before.value), abs=2e-4)
    assert len(at.dataframe[-1].value) == 2 * 4 + 2  # the ranking table: single heads and whole layers


def test_comparison_aligns_the_two_sentences():
    at = open_page("good")
    at.text_input(key="classifier_cmp_a").input("good")
    at.text_input(key="classifier_cmp_b").input("not good").run()
    spec = next(spec for title, spec in figures(at).items() if "tokens aligned" in title)
    assert spec["data"][0]["text"] == [["", "good"] + [""] * 10, ["not", "good"] + [""] * 10]
    assert metric(at, "First: p(") and metric(at, "Second: p(")


def test_blank_text_gives_a_message():
    at = open_page("\n   \n")
    assert any("Type at least one sentence" in i.value for i in at.info)
    assert not at.dataframe


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"caf\xe9 au lait\n", "not UTF-8"), (b"x\n" * 1_100_000, "the limit is 2,000,000"), (b"\n\n", "no text")],
)
def test_bad_uploaded_files_give_a_message(content, message):
    at = open_page("good")
    at.file_uploader(key="classifier_file").set_value(("reviews.txt", content, "text/plain")).run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_an_uploaded_file_replaces_the_text_box_lines():
    at = open_page("good")
    at.file_uploader(key="classifier_file").set_value(("r.txt", b"great film\n\nboring plot\n", "text/plain")).run()
    assert list(at.dataframe[0].value["text"]) == ["great film", "boring plot"]
    assert any("1 blank lines skipped" in c.value for c in at.caption)


def test_colours_mean_towards_positive_whatever_is_predicted():
    at = open_page("this film is bad and boring")
    assert any("Explaining the log-odds of **positive**" in m.value for m in at.markdown)
    assert any(
        "blue pushes towards **positive**" in m.value and "red pushes towards **negative**" in m.value
        for m in at.markdown
    )
    assert any("Prediction: **negative**" in m.value for m in at.markdown)
    caption = next(c.value for c in at.caption if "Baseline:" in c.value)
    assert "<unk> embedding at every word" in caption and "log-odds 0 = 50/50" in caption
    ig = figures(at)["Integrated gradients per token"]["data"][0]
    # a negative review: its words push towards negative, so the sum of the signed scores is below 0
    assert sum(array(ig["y"])) < 0


def test_each_head_switch_names_its_layer_and_head_in_full():
    """Issue 50, item 5: one row of switches per layer, every head named "L2 H3", the whole layer last;
    a layer switched off counts once, whatever of its heads are chosen too."""
    at = open_page("the movie was great")
    rows = [at.pills(key=f"classifier_off_{layer}") for layer in range(2)]
    assert [row.label.split(":")[0] for row in rows] == ["Layer 1", "Layer 2"]
    assert rows[1].options == ["L2 H1", "L2 H2", "L2 H3", "L2 H4", "whole layer"]
    at.pills(key="classifier_off_1").set_value([0, 3, WHOLE_LAYER]).run()
    assert "0 head(s) and 1 layer(s) off" in next(m for m in at.metric if " off" in m.label).label
    at.pills(key="classifier_off_1").set_value([0, 3]).run()
    assert "2 head(s) and 0 layer(s) off" in next(m for m in at.metric if " off" in m.label).label


def test_the_head_ranking_table_has_no_none():
    at = open_page("the movie was great")
    at.button(key="classifier_rank").click().run()
    table = at.dataframe[-1].value
    assert not table.isna().any().any() and "None" not in table.astype(str).values
    assert "all" in set(table["head"]) and "layer 1, head 1" in set(table["switched off"])


def test_reliability_diagram_shows_the_measured_calibration():
    at = open_page("good")
    metrics = json.loads((Path(APP).parent / "assets/models/imdb-sentiment/metrics.json").read_text())["calibration"]
    spec = next(s for s in figures(at).values() if s["layout"].get("meta") == "reliability")
    names = [trace["name"] for trace in spec["data"]]
    assert any(f"ECE {metrics['test_ece_before']:.3f}" in n for n in names)
    assert any(f"ECE {metrics['test_ece_after']:.3f}" in n for n in names)
    assert metrics["test_ece_after"] < metrics["test_ece_before"]


def test_an_example_the_model_gets_wrong_says_so():
    from transformer import analyze, load_model
    from ui.text import example_entries

    text = example_entries()["sarcasm"]["text"]
    wrong = (
        analyze(load_model(Path(APP).parent / "assets/models/imdb-sentiment"), [text]).predicted_label(0) != "negative"
    )
    at = open_page(text)
    assert any("model misreads this" in w.value for w in at.warning) == wrong


def test_text_the_model_cannot_read_has_no_headline():
    at = open_page("영화가 정말 좋았어요")
    assert not any(m.value.startswith("Prediction:") for m in at.markdown)
    assert any("not in a language the model reads" in w.value for w in at.warning)


def test_token_chips_never_overlap():
    at = open_page("I thought it would be boring but it was wonderful and the ending was moving and beautiful")
    spec = figures(at)["Integrated gradients"]
    boxes = sorted((s["y0"], s["x0"], s["x1"]) for s in spec["layout"]["shapes"])
    for (y_a, _, right), (y_b, left, _) in zip(boxes, boxes[1:]):
        assert y_a != y_b or right <= left


def test_a_model_with_nan_weights_gives_a_clear_message(tmp_path, tiny_vocab):
    from tests.test_page_playground import nan_model

    key = "upload: nan.safetensors"
    uploads = {key: nan_model(tmp_path, tiny_vocab)}
    at = open_app("classifier", uploads=uploads, chosen=key, by_link=True, text="the movie was great")
    assert any("not a number" in e.value for e in at.error)


def test_in_korean_the_class_names_are_korean_in_table_lines_and_figures():
    at = open_app("classifier", text="영화가 정말 좋았어요\n최악의 영화", lang="ko")
    table = at.dataframe[0].value
    assert set(table["label"]) <= {"긍정", "부정"} and len(set(table["label"])) >= 1
    assert {"p(긍정)", "p(부정)"} <= set(table.columns)
    lines = " ".join(m.value for m in at.markdown)
    assert "긍정" in lines and "positive" not in lines
    bars = next(spec for spec in figures_by_meta(at).values() if spec["layout"].get("meta") == "before-after")
    assert bars["data"][0]["x"] == ["부정", "긍정"]


def test_the_head_ranking_speaks_korean_in_korean_mode(monkeypatch):
    import ui.i18n

    # AppTest formats the selectboxes' options outside the script run, where no session says "ko"
    monkeypatch.setattr(ui.i18n, "current_lang", lambda: "ko")
    at = open_app("classifier", lang="ko", text="정말 재미있는 영화였다")
    at.button(key="classifier_rank").click().run()
    assert not at.exception, at.exception
    heat = next(spec for title, spec in figures(at).items() if title.startswith("껐을 때 p("))
    assert heat["data"][0]["x"][0] == "헤드 1" and heat["data"][0]["x"][-1] == "레이어 전체"
    assert heat["data"][0]["y"][0] == "레이어 1"
    bars = next(spec for title, spec in figures(at).items() if "변화가 가장 큰 것" in title)
    assert all(name.startswith("레이어 ") for name in bars["data"][0]["y"])
    table = at.dataframe[-1].value
    assert list(table.columns)[:3] == ["끈 것", "레이어", "헤드"] and "전체" in set(table["헤드"])
    assert not any("head" in str(v) or "layer" in str(v) for v in table["끈 것"])
