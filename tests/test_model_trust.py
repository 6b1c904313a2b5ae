"""A sentiment model's percentage is not presented as trustworthy on short negated sentences (issue 40,
item 3: "not bad at all" -> negative 98.96 %): under the prediction the Classifier and the Playground say
where the model was measured and how it does on short sentences, read from its metrics.json."""

from __future__ import annotations

import json

import pytest

from tests.app_helpers import ROOT, open_app, texts
from ui.model_trust import short_sentence_score, trust_note

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def metrics(name: str) -> dict:
    return json.loads((ROOT / "assets" / "models" / name / "metrics.json").read_text(encoding="utf-8"))


def test_a_model_not_measured_on_short_sentences_says_so():
    note = trust_note(metrics("imdb-sentiment"))
    assert note.startswith("Measured on 25,000 test movie reviews (IMDB): 89.2% right.")
    assert "Not measured on short negated sentences" in note and "not bad at all" in note


def test_recorded_short_sentence_probes_are_reported_and_flagged_below_the_bar():
    data = metrics("imdb-sst2-sentiment")
    assert short_sentence_score(data) == (26, 38)
    note = trust_note(data)
    assert "On 38 short hand-written sentences with negation or contrast: 26 right (68%)." in note
    assert note.endswith("its percentage can be high and wrong.")


def test_a_model_above_the_bar_is_not_flagged_and_one_without_measurements_has_no_note():
    data = metrics("imdb-sst2-sentiment")
    data["outside_test_sets"]["probes"]["right"] = {"issue": 8, "held_out_words": 12, "other": 16}
    note = trust_note(data)
    assert "36 right (95%)." in note and "high and wrong" not in note
    assert trust_note(None) is None and trust_note({"data": {}}) is None


def notes(at) -> list[str]:
    return [c for c in texts(at.caption) if c.startswith(("Measured on", "테스트")) or "측정한 정확도" in c]


def test_classifier_page_puts_the_note_under_not_bad_at_all():
    at = open_app("classifier", text="not bad at all")
    found = notes(at)
    assert len(found) == 1 and "25,000 test movie reviews (IMDB)" in found[0] and "not bad at all" in found[0]


def test_playground_in_korean_says_where_the_korean_model_was_measured():
    at = open_app("playground", text="나쁘지 않았어", lang="ko")
    found = notes(at)
    assert len(found) == 1
    measured = json.loads((ROOT / "assets/models/nsmc-sentiment/metrics.json").read_text(encoding="utf-8"))
    accuracy = 100 * measured["metrics"]["test_accuracy"]
    assert found[0].startswith(f"한국어 영화 리뷰(NSMC) 테스트 30,000개로 측정한 정확도: {accuracy:.1f}%.")
    assert "짧은 부정 문장으로는 측정하지 않았습니다" in found[0]
