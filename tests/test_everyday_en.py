"""The 60 everyday English review sentences (bench/data/everyday_en.tsv) and issue 50's four stay out of every
sentiment training: no template sentence is one of them or holds one, training drops an example equal to one,
and none is an SST-2 training sentence."""

from __future__ import annotations

import pytest

from transformer.datasets.imdb import Example
from transformer.text.contrast import (
    comma_contrast_sentences,
    contrast_sentences,
    lukewarm_sentences,
    number_sentences,
)
from transformer.text.corpora import default_sst2_path, load_sst2
from transformer.text.held_out import ISSUE_SENTENCES, drop_held_out, leaks, load_everyday, normalized


def test_sixty_sentences_balanced_and_distinct():
    sentences = load_everyday()
    assert len(sentences) == 60
    assert sum(s.label for s in sentences) == 30
    assert len({normalized(s.text) for s in sentences}) == 60
    assert {s.kind for s in sentences} == {"number", "short", "everyday", "contrast", "hedged", "ironic"}


def test_normalized_matches_sst2_spelling():
    # SST-2 is PTB-tokenised and lower-cased: "did n't", "'ve", spaced punctuation
    assert normalized("I didn't check my phone once.") == normalized("i did n't check my phone once .")
    assert normalized("I've seen better.") == normalized("i 've seen better .") == "i ve seen better"
    assert normalized("10/10, no notes.") == "10 10 no notes"


@pytest.mark.parametrize("seed", [13, 21, 22, 23, 24])
def test_no_template_sentence_is_held_out(seed):
    generated = [ex.text for ex in contrast_sentences(4000, seed)]
    generated += [ex.text for ex in comma_contrast_sentences(3000, seed)]
    generated += [ex.text for ex in number_sentences(4000, seed)]
    generated += lukewarm_sentences(2000, seed)
    assert leaks(generated, contained=True) == []


def test_training_drops_a_held_out_sentence():
    sentences = load_everyday()
    examples = [Example("the plot was dull", 0), Example(sentences[0].text.upper(), sentences[0].label)]
    examples += [Example("i 've seen better .", 0), Example(ISSUE_SENTENCES[2], 1)]
    assert [ex.text for ex in drop_held_out(examples)] == ["the plot was dull"]
    assert leaks(["it was fine. " + ISSUE_SENTENCES[1]], contained=True) == ["it was fine. " + ISSUE_SENTENCES[1]]
    assert leaks(["it was fine. " + ISSUE_SENTENCES[1]]) == []


def test_no_sst2_training_sentence_is_held_out():
    if not default_sst2_path().is_file():
        pytest.skip("../shared/data/sst2 is not here")
    assert leaks([ex.text for ex in load_sst2(default_sst2_path())], contained=True) == []


def test_score_sentences_take_their_label_from_the_score():
    import re

    seen = 0
    for ex in number_sentences(2000, 5):
        found = re.search(r"(\d+(?:\.\d+)?)(?: ?/ ?| out of )(10|5)\b", ex.text)
        if found:
            value, scale = float(found.group(1)), int(found.group(2))
            assert ex.label == int(value / scale >= 0.7), ex.text
            assert not 0.45 <= value / scale <= 0.65, ex.text  # the middle of a scale has no clear label
            seen += 1
    assert seen > 500


def test_lukewarm_sentences_are_trained_towards_fifty_fifty():
    from transformer.text.refine_encoder import LUKEWARM, targets

    assert targets([1, LUKEWARM, 0]).tolist() == [[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]]


def test_shipped_default_on_the_sixty_is_as_reported():
    """docs/models.md's 'after' figures are the shipped model's (bench/bench_everyday.py), and fewer sure mistakes
    than the first fine-tuning's 'before' figures (11 of 60 wrong with confidence >= 0.9)."""
    import json
    import sys

    from transformer.datasets.imdb import _REPO_ROOT

    sys.path.insert(0, str(_REPO_ROOT / "bench"))
    from bench_everyday import everyday

    from transformer import load_model

    results = _REPO_ROOT / "bench" / "results"
    before, after = (
        json.loads((results / f"everyday_en_{when}.json").read_text(encoding="utf-8"))["models"][
            "assets/models/minilm-sentiment"
        ]["everyday"]
        for when in ("before", "after")
    )
    measured = everyday(load_model(_REPO_ROOT / "assets" / "models" / "minilm-sentiment"))
    assert measured["calibrated"]["wrong_sure"] == after["calibrated"]["wrong_sure"] == 7
    assert before["calibrated"]["wrong_sure"] == 11
    assert measured["calibrated"]["accuracy"] == after["calibrated"]["accuracy"] == 0.7333
    for got, want in zip(measured["sentences"], after["sentences"]):
        assert got["text"] == want["text"] and abs(got["p_positive"] - want["p_positive"]) < 2e-3
