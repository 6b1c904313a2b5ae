"""The Generate page says which model runs and what it was trained on: the bundled model's data from its
metrics.json, an imported model's folder and family and that its training data is unknown (issue 38,
item 5; the intro named the bundled model's data whatever was selected)."""

from __future__ import annotations

import pytest

from tests.app_helpers import open_app, texts
from tests.test_page_generate_imported import KEY, gpt2  # noqa: F401 - the fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def model_notes(at) -> list[str]:
    return [c for c in texts(at.caption) if c.startswith(("Model:", "모델:"))]


def test_bundled_language_model_names_its_training_data_from_metrics():
    at = open_app("generate", state={"gen_model": "review-lm"})
    assert model_notes(at) == [
        "Model: **review\\-lm**, trained here from nothing (random weights) on movie reviews (IMDB) and Korean movie reviews (NSMC)."
    ]
    others = [c for c in texts(at.caption) + texts(at.markdown) if not c.startswith("Model:")]
    assert not any("IMDB" in c for c in others)  # nothing else names one model's data


def test_bundled_language_model_note_in_korean():
    at = open_app("generate", lang="ko", state={"gen_model": "review-lm"})
    assert model_notes(at) == [
        "모델: **review\\-lm**. 이 앱에서 무작위 가중치부터 처음 학습했습니다. 학습 데이터: 영화 리뷰(IMDB), 한국어 영화 리뷰(NSMC)."
    ]


def test_imported_gpt2_says_it_is_imported_and_its_data_unknown(gpt2):  # noqa: F811 - the fixture
    ours = gpt2[0]
    at = open_app("generate", uploads={KEY: ours}, chosen=KEY)
    notes = model_notes(at)
    assert len(notes) == 1 and "tiny\\-gpt2" in notes[0] and "GPT\\-2" in notes[0]
    assert "not known here" in notes[0] and "IMDB" not in notes[0]
