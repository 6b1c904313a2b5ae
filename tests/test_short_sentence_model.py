"""The second English classifier (assets/models/imdb-sst2-sentiment): better than the IMDB-only model on
short sentences it never saw and on negation and contrast, calibrated on them, and picked from the sidebar
like any bundled model."""

from __future__ import annotations

import pytest

from transformer import load_model
from transformer.datasets.imdb import train_val_split
from transformer.text.corpora import default_sst2_path, load_sst2
from transformer.text.predict import predict_batch

from .app_helpers import ROOT, open_app

SHORT = ROOT / "assets" / "models" / "imdb-sst2-sentiment"
IMDB_ONLY = ROOT / "assets" / "models" / "imdb-sentiment"


def held_out_accuracy(path) -> float:
    """Accuracy on the 346 SST-2 sentences that neither training nor the temperature saw."""
    if not default_sst2_path().is_file():
        pytest.skip("../shared/data/sst2 is not here")
    _, validation = train_val_split(load_sst2(default_sst2_path()), 0.1, 13)
    held_out = validation[1::2]
    loaded = load_model(path)
    names = list(loaded.config.label_names)
    batch = predict_batch(loaded, [ex.text for ex in held_out], 512)
    return sum(names.index(p.label) == ex.label for p, ex in zip(batch.predictions, held_out)) / len(held_out)


def test_short_sentences_are_read_better_than_by_the_imdb_only_model():
    short, imdb_only = held_out_accuracy(SHORT), held_out_accuracy(IMDB_ONLY)
    assert short == pytest.approx(0.8035, abs=5e-4)  # docs/models.md's figure
    assert short - imdb_only > 0.04


def test_it_is_a_sidebar_choice_with_its_calibration():
    loaded = load_model(SHORT)
    assert loaded.config.temperature == pytest.approx(1.5313)
    at = open_app("playground", model="imdb-sst2-sentiment", text="a gorgeous, witty, seductive movie")
    assert at.session_state["selection"].model_key == "imdb-sst2-sentiment"
    assert at.metric[0].value == "positive"


def test_not_flips_the_word_after_it_even_for_words_the_templates_never_used():
    """The template sentences (transformer.text.contrast) taught "not" and "but"; the probes of
    bench/sentiment_probes.py are hand-written, and one group uses only words the templates never do."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from sentiment_probes import HELD_OUT_WORD_PROBES, PROBES

    def right(model, probes) -> int:
        names = list(model.config.label_names)
        batch = predict_batch(model, list(probes), 512)
        return sum(names.index(p.label) == label for p, label in zip(batch.predictions, probes.values()))

    short, imdb_only = load_model(SHORT), load_model(IMDB_ONLY)
    assert [p.label for p in predict_batch(short, ["not bad", "i did not like it"], 512).predictions] == [
        "positive",
        "negative",
    ]
    assert right(short, PROBES) == 5 and right(imdb_only, PROBES) == 1  # docs/models.md's figures
    assert right(short, HELD_OUT_WORD_PROBES) == 10 and right(imdb_only, HELD_OUT_WORD_PROBES) == 4
