"""The bundled Korean model (assets/models/nsmc-sentiment) on every text page, through the CLI and the
Python API: Korean is a first-class input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from transformer import analyze, load_model
from transformer.text.cuts import has_hangul, three_cuts

from .app_helpers import ROOT, figures, open_app, texts

MODEL = ROOT / "assets" / "models" / "nsmc-sentiment"
SENTENCE = "배우들 연기가 정말 좋았고 마지막까지 눈을 뗄 수 없었어요."
HANGUL_PIECE = "연기"


@pytest.fixture(scope="module")
def loaded():
    return load_model(MODEL)


def test_the_bundle_holds_its_pieces_and_its_figures(loaded):
    assert loaded.config.tokenizer == "wordpiece" and loaded.splitter is not None
    metrics = json.loads((MODEL / "metrics.json").read_text(encoding="utf-8"))
    # the issue asks for 0.875 (aim 0.88); the shipped model measured 0.8765 (26,294 of 30,000; docs/models.md)
    assert metrics["metrics"]["test_accuracy"] >= 0.875 and metrics["data"]["test"] == 30_000
    assert metrics["metrics"]["best_validation_accuracy"] >= 0.879  # chosen on validation
    assert [h["epoch"] for h in metrics["pretraining_history"]] == list(range(1, 23))
    assert metrics["calibration"]["test_ece_after"] < metrics["calibration"]["test_ece_before"]
    assert sum(p.stat().st_size for p in MODEL.iterdir()) <= 25 * 1024**2


def test_clear_korean_reviews_are_read_right(loaded):
    result = analyze(loaded, ["정말 재미있고 감동적인 영화였어요 최고", "시간 낭비였다 최악의 영화"])
    assert [result.predicted_label(i) for i in range(2)] == ["positive", "negative"]
    assert all(has_hangul(token) for token in result.tokens[0] if token.strip("#"))


ODD = {
    "jamo": "ㅋㅋㅋㅋㅋ",
    "no spaces": "영화는재미없었다ㅠㅠ",
    "mixed": "This movie 진짜 good 👍 10점",
    "emoji": "😀" * 5,
    "10,000-character paste": "재미있는 영화 " * 1_300,
    "10,000 characters without a space": "가" * 10_000,
}


@pytest.mark.parametrize("text", list(ODD.values()), ids=list(ODD))
def test_mixed_and_odd_korean_input_gives_tokens(loaded, text):
    result = analyze(loaded, [text])
    assert len(result.tokens[0]) >= 1 and result.probabilities[0].sum() == pytest.approx(1.0, abs=1e-5)
    if " " in text and len(text) >= 10_000:
        assert result.truncated[0] and len(result.tokens[0]) == loaded.config.default_max_tokens
    if " " not in text and len(text) >= 10_000:  # a "word" longer than WordPiece reads (100 characters)
        assert result.tokens[0] == [text] and result.unknown[0] == [True]


def test_the_cli_inspects_a_korean_sentence():
    done = subprocess.run(
        [sys.executable, "-m", "transformer", "inspect", "--checkpoint", str(MODEL), "--text", "정말 재미있어요"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)["inputs"][0]
    assert "재미" in "".join(record["tokens"]) and record["prediction"]["label"] == "positive"
    layers = len(record["attention"]["encoder"])
    config = json.loads((MODEL / "config.json").read_text(encoding="utf-8"))
    assert layers == config["num_layers"] == 4 and len(record["attention"]["encoder"][0][0]) == len(record["tokens"])


def test_three_cuts_of_a_korean_sentence(loaded):
    pieces, morphemes, syllables = three_cuts("영화는 재미없었다", loaded)
    assert morphemes.available and list(morphemes.tokens) == ["영화", "는", "재미없", "었", "다"]
    assert list(syllables.tokens) == list("영화는재미없었다")
    assert "".join(p.removeprefix("##") for p in pieces.tokens) == "영화는재미없었다"


def test_korean_interface_starts_on_the_korean_model_with_korean_text():
    at = open_app("playground", lang="ko")
    assert at.sidebar.selectbox(key="model").value == "nsmc-sentiment"
    assert has_hangul(at.text_area(key="text").value)
    assert any(HANGUL_PIECE in t or "배우" in t for t in texts(at.markdown))
    assert any("한국어는 어떻게" in e.label for e in at.get("expander") if hasattr(e, "label"))


def test_english_interface_keeps_the_english_model():
    at = open_app("playground", lang="en")
    assert at.sidebar.selectbox(key="model").value == "imdb-sentiment"


def test_the_attention_page_labels_its_axes_with_hangul_pieces():
    at = open_app("attention", lang="ko", text=SENTENCE)
    heatmap = figures(at)["attention-heatmap"]
    labels = heatmap["data"][0]["y"]
    assert any(has_hangul(str(label)) for label in labels)


@pytest.mark.parametrize("page", ["masks", "classifier"])
def test_other_text_pages_run_on_korean_tokens(page):
    at = open_app(page, lang="ko", text=SENTENCE + "\n최악의 영화")
    assert not at.exception
    shown = json.dumps([json.loads(el.proto.spec) for el in at.get("plotly_chart")], ensure_ascii=False)
    assert "배우" in shown and "연기" in shown  # the chosen sentence's pieces drawn in the figures


def test_the_korean_lesson_opens_each_step_on_a_korean_sentence():
    from ui.tour import LESSON

    with_text = [step for step in LESSON if "text" in step.query]
    assert with_text and all(has_hangul(step.query_ko.get("text", "")) for step in with_text)


def test_the_masks_page_pads_a_korean_sentence_with_korean_ones():
    at = open_app("masks", lang="ko", text="영화가 정말 좋았다", mask_view="padding")
    shown = json.dumps([json.loads(el.proto.spec) for el in at.get("plotly_chart")], ensure_ascii=False)
    assert "지루" in shown and "Boring" not in shown
