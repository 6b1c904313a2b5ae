"""The Classifier page's decisions as pure functions (ui/classifier.py), and the page's long and pasted
texts (issue 50, items 4, 5 and 8; issue 51, item 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app_helpers import open_app, texts
from ui.classifier import (
    IG_LEAST_STEPS,
    IG_TOKEN_STEPS,
    WHOLE_LAYER,
    calibration_wording,
    ig_steps,
    prediction_table,
    switch_label,
    switched_off,
    table_caption,
)
from ui.i18n import translate
from ui.models import MODELS_DIR


def info(before: float, after: float, temperature: float = 1.28) -> dict:
    return {"test_ece_before": before, "test_ece_after": after, "temperature": temperature}


@pytest.mark.parametrize(
    ("numbers", "key"),
    [
        (info(0.040, 0.008, 1.38), "classifier.calibration_text"),  # over-confident, fixed
        (info(0.040, 0.008, 0.80), "classifier.calibration_text_under"),
        (info(0.0069, 0.0248, 1.28), "classifier.calibration_worse"),  # minilm-sentiment's numbers
        (info(0.0069, 0.0248, 0.90), "classifier.calibration_worse_under"),
        (info(0.0071, 0.0073, 1.05), "classifier.calibration_same"),
    ],
)
def test_the_calibration_paragraph_says_what_its_numbers_say(numbers, key):
    chosen, fields = calibration_wording(numbers)
    assert chosen == key
    assert (
        fields["before"] == f"{numbers['test_ece_before']:.3f}"
        and fields["after"] == f"{numbers['test_ece_after']:.3f}"
    )
    english = translate(key, "en", **fields, fitted="validation split")
    if "worse" in key:
        assert "worse" in english and "over-confident: on the test" not in english
    if key == "classifier.calibration_text":
        assert "over-confident" in english and "brings it to" in english


def test_every_bundled_classifier_gets_the_wording_its_measurements_support():
    for folder in sorted(MODELS_DIR.iterdir()):
        metrics = folder / "metrics.json"
        calibration = json.loads(metrics.read_text(encoding="utf-8")).get("calibration") if metrics.is_file() else None
        if not calibration or "test_ece_after" not in calibration:
            continue
        key, _ = calibration_wording(calibration)
        worse = calibration["test_ece_after"] > calibration["test_ece_before"] + 0.0005
        assert ("worse" in key) == worse, folder.name


def test_long_texts_get_fewer_integration_steps_within_the_budget():
    assert ig_steps(12, 50) == 50  # a sentence: what was asked
    assert ig_steps(512, 50) == IG_TOKEN_STEPS // 512 == 8
    assert ig_steps(512, 4) == 4 and ig_steps(100_000, 50) == IG_LEAST_STEPS
    assert all(ig_steps(n, 200) * n <= IG_TOKEN_STEPS for n in (21, 100, 400, 1024))


def test_one_sentence_is_singular_and_head_switches_are_named_in_full():
    assert table_caption(1, "en").startswith("1 sentence;") and table_caption(3, "en").startswith("3 sentences;")
    assert table_caption(1, "ko").startswith("문장 1개")
    assert switch_label(2, 6, "en") == "L3 H7" and switch_label(2, WHOLE_LAYER, "ko") == "레이어 전체"
    assert switched_off({0: [1, 3], 1: [WHOLE_LAYER, 2]}, 3) == ([(0, 1), (0, 3)], [1])
    assert switched_off({}, 2) == ([], [])


def test_the_prediction_table_shows_calibrated_probabilities_beside_the_raw_ones():
    rows = [
        {"line": 1, "text": "a", "label": "positive", "probability": 0.9, "p(negative)": 0.1, "p(positive)": 0.9},
        {"line": 2, "text": "b", "label": None, "probability": np.nan, "p(negative)": np.nan, "p(positive)": np.nan},
    ]
    raw = np.array([[0.1, 0.9], [np.nan, np.nan]])
    table = prediction_table(rows, raw, ["negative", "positive"], 2.0)
    assert table["raw probability"].tolist()[0] == 0.9 and 0.5 < table["probability"][0] < 0.9
    assert table["probability"].isna().tolist() == [False, True]
    assert prediction_table(rows, raw, ["negative", "positive"], 1.0)["probability"][0] == 0.9


def test_a_long_text_is_explained_with_fewer_steps_and_says_so():
    at = open_app("classifier", text="the movie was great but the plot was thin " * 400)
    said = [c for c in texts(at.caption) if "steps instead of 50" in c]
    tokens = int(said[0].split(" has ")[1].split(" tokens")[0].replace(",", ""))
    steps = ig_steps(tokens, 50)
    assert steps < 50 and said[0].startswith(f"Integrated gradients used {steps} steps")
    assert any(f"integrated in {steps} steps" in c for c in texts(at.caption))


def test_a_pasted_comparison_over_its_limit_is_cut_with_the_links_message():
    at = open_app("classifier", text="good")
    long = "not good " * 400  # 3,600 characters
    at.text_input(key="classifier_cmp_b").input(long).run()
    assert any(f"{len(long):,}" in w and "2,000" in w for w in texts(at.warning)), texts(at.warning)


def test_the_one_sentence_table_and_the_head_switches_in_korean():
    at = open_app("classifier", lang="ko", text="영화가 정말 좋았다")
    assert any(c.startswith("문장 1개.") for c in texts(at.caption))
    row = at.pills(key="classifier_off_0")
    assert row.label.startswith("레이어 1") and row.options[0] == "L1 H1" and row.options[-1] == "레이어 전체"
