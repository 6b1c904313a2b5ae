"""Batch prediction and the text-file reader the Classifier page uses."""

from pathlib import Path

import numpy as np
import pytest

from transformer.analysis.analyze import analyze
from transformer.bundle import load_bundle
from transformer.text.predict import length_batches, predict_batch, read_lines

MODEL = Path(__file__).resolve().parent.parent / "assets" / "models" / "imdb-sentiment"
TEXTS = ["the movie was great", "bad", "not good at all and the plot was boring", "loved it", "a film"]


def test_batch_prediction_equals_analyze(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    batch = predict_batch(loaded, TEXTS, batch_size=2)
    reference = analyze(loaded, TEXTS)
    probs = np.stack([p.probabilities for p in batch.predictions])
    np.testing.assert_allclose(probs, reference.probabilities, atol=1e-5)
    assert [p.index for p in batch.predictions] == list(range(len(TEXTS)))
    assert [p.label for p in batch.predictions] == [reference.predicted_label(i) for i in range(len(TEXTS))]
    assert [p.num_tokens for p in batch.predictions] == [int(n) for n in reference.lengths]
    for p in batch.predictions:
        assert p.probability == pytest.approx(p.probabilities.max())


def test_lines_without_words_are_skipped_and_reported(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    batch = predict_batch(loaded, ["good", "", '""', "   ", "bad"])
    assert batch.skipped == [1, 2, 3]
    assert [p.text for p in batch.predictions] == ["good", "bad"]
    assert [row["line"] for row in batch.rows()] == [1, 5]
    nothing = predict_batch(loaded, ["", " "])
    assert nothing.predictions == [] and nothing.skipped == [0, 1]


def test_progress_is_reported_after_each_batch(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    calls = []
    predict_batch(loaded, TEXTS + [""], batch_size=2, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 5), (4, 5), (5, 5)]


def test_truncation_is_flagged(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    batch = predict_batch(loaded, ["the movie was great", "bad"], max_len=3)
    assert [(p.num_tokens, p.truncated) for p in batch.predictions] == [(3, True), (1, False)]
    row = batch.rows()[0]
    assert set(row) == {"line", "text", "label", "probability", "p(negative)", "p(positive)", "tokens", "truncated"}
    assert batch.max_len == 3


def test_length_batches_group_similar_lengths():
    assert length_batches([5, 1, 3, 2, 4], 2) == [[1, 3], [2, 4], [0]]
    assert length_batches([], 4) == []


def test_read_lines_keeps_non_blank_lines():
    lines, blank = read_lines("\ufefffirst line\n\n  second  \r\nthird\n".encode())
    assert lines == ["first line", "second", "third"] and blank == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("caf\u00e9\n".encode("latin-1"), "not UTF-8"),
        (b"\n \n", "no text"),
        (b"x" * 101, "the limit is 100"),
        (b"a\nb\nc\nd\n", "4 lines; the limit is 3"),
    ],
)
def test_read_lines_rejects_bad_files_with_a_message(data, message):
    with pytest.raises(ValueError, match=message):
        read_lines(data, max_bytes=100, max_lines=3)


def test_read_lines_splits_on_newlines_only():
    lines, blank = read_lines("one\x0bline\u2028still\x85one\r\ntwo\x0cthree\n".encode())
    assert lines == ["one\x0bline\u2028still\x85one", "two\x0cthree"] and blank == 0


def test_length_batches_bound_the_attention_cells():
    batches = length_batches([1024] * 9 + [10] * 3, 64, max_cells=4 * 1024**2)
    assert batches == [[9, 10, 11, 0], [1, 2, 3, 4], [5, 6, 7, 8]]  # at most 4 x 1024² cells each
    assert length_batches([2000], 64, max_cells=100) == [[0]]  # one input alone may exceed it


def test_predictions_carry_tokens_logits_and_flag_unknown_words():
    loaded = load_bundle(MODEL)
    batch = predict_batch(loaded, ["the zzqxv movie"])
    (p,) = batch.predictions
    assert p.tokens == ("the", "zzqxv", "movie") and p.unknown == (False, True, False)
    np.testing.assert_allclose(p.probabilities, np.exp(p.logits) / np.exp(p.logits).sum(), rtol=1e-5)
    assert p.finite and p.original_length == 3
