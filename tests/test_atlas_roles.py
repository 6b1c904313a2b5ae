"""Head role scores on constructed attention patterns (transformer/head_roles.py, the ViT locality)."""

import numpy as np
import pytest

from transformer.analysis.head_roles import (
    assign_roles,
    broadness_score,
    diagonal_score,
    induction_score,
    is_punctuation,
    is_special_token,
    next_token_score,
    previous_token_score,
    punctuation_score,
    sink_score,
    text_role_scores,
)
from transformer.vision.locality import locality_score, mean_patch_distance, patch_distances


def previous_head(t: int) -> np.ndarray:
    """Row 0 on itself (nothing before it), row i on i - 1."""
    w = np.zeros((t, t))
    w[0, 0] = 1
    w[np.arange(1, t), np.arange(t - 1)] = 1
    return w


def causal_uniform(t: int) -> np.ndarray:
    w = np.tril(np.ones((t, t)))
    return w / w.sum(-1, keepdims=True)


def test_a_pure_previous_token_head_scores_one_on_previous_token_only():
    w = previous_head(8)
    assert previous_token_score(w) == pytest.approx(1.0)
    assert diagonal_score(w) == pytest.approx(1 / 8)
    assert broadness_score(w, causal=True) == pytest.approx(0.0)


def test_diagonal_sink_and_uniform_heads():
    assert diagonal_score(np.eye(6)) == pytest.approx(1.0)
    assert previous_token_score(np.eye(6)) == pytest.approx(0.0)
    sink = np.zeros((5, 5))
    sink[:, 0] = 1
    assert sink_score(sink) == pytest.approx(1.0)
    assert broadness_score(np.full((4, 4), 0.25)) == pytest.approx(1.0)
    assert broadness_score(causal_uniform(6), causal=True) == pytest.approx(1.0)
    # a causal uniform head over-counts as narrow when judged against all keys
    assert broadness_score(causal_uniform(6), causal=False) < 0.8


def test_punctuation_score_counts_the_weight_on_punctuation():
    tokens = ["the", "movie", ",", "Ġok", ".", "##!"]
    marks = np.array([is_punctuation(tok) for tok in tokens])
    assert marks.tolist() == [False, False, True, False, True, True]
    w = np.zeros((6, 6))
    w[:, 2] = 0.5
    w[:, 0] = 0.5
    assert punctuation_score(w, marks) == pytest.approx(0.5)
    assert is_punctuation("␣") is False and is_punctuation("。") is True and is_punctuation("ㅋㅋ") is False
    with pytest.raises(ValueError, match="one entry per key"):
        punctuation_score(w, marks[:3])


def test_induction_score_of_a_hand_built_head():
    period, start = 5, 1  # <start> a b c d e a b c d e
    t = start + 2 * period
    w = np.zeros((t, t))
    w[:, 0] = 1.0  # every row on the start token ...
    for j in range(period - 1):  # ... except the copy's rows 0..3, which look at what followed their token
        q = start + period + j
        w[q] = 0
        w[q, start + j + 1] = 0.75
        w[q, 0] = 0.25
    assert induction_score(w, period, start) == pytest.approx(0.75)
    assert induction_score(previous_head(t), period, start) == pytest.approx(0.0)
    stacked = np.stack([w, previous_head(t)])  # (heads, T, T)
    np.testing.assert_allclose(induction_score(stacked, period, start), [0.75, 0.0])
    with pytest.raises(ValueError, match="two copies"):
        induction_score(w, 6, start)


def test_scores_work_on_layer_head_stacks_and_roles_follow_the_largest():
    t = 7
    heads = np.stack([previous_head(t), np.eye(t), causal_uniform(t), 0.7 * previous_head(t) + 0.3 * np.eye(t)])
    weights = heads.reshape(2, 2, t, t)
    scores = text_role_scores(weights, ["<s>", "a", "b", ".", "c", "d", "e"], causal=True)
    assert scores["previous"].shape == (2, 2)
    roles, strength = assign_roles(scores)
    assert roles[0, 0] == "previous" and strength[0, 0] == pytest.approx(1.0)
    assert roles[0, 1] == "diagonal"
    assert roles[1, 0] == "broad"
    assert roles[1, 1] == "previous" and strength[1, 1] == pytest.approx(0.7)  # diagonal: 0.3 + 0.7/7 = 0.4
    flat = {"previous": np.array([[0.1]]), "broadness": np.array([[0.2]])}
    assert assign_roles(flat)[0][0, 0] == "mixed"


def test_locality_of_self_uniform_and_neighbour_heads():
    grid = 3
    p = grid * grid
    own = np.eye(p + 1)  # [CLS] + patches, each patch on itself
    assert locality_score(own, grid, class_token=True) == pytest.approx(1.0)
    uniform = np.full((p, p), 1 / p)
    assert locality_score(uniform, grid, class_token=False) == pytest.approx(0.0)
    d = patch_distances(grid)
    assert d[0, 8] == pytest.approx(np.hypot(2, 2)) and d[4, 5] == pytest.approx(1.0)
    right = np.zeros((p, p))
    for i in range(p):
        right[i, i + 1 if i % grid < grid - 1 else i - 1] = 1.0  # the neighbour to the side
    assert mean_patch_distance(right, grid, class_token=False) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="patch tokens"):
        locality_score(np.eye(5), grid, class_token=False)


def next_head(t: int) -> np.ndarray:
    """Row i on i + 1, the last row on itself (nothing after it)."""
    w = np.zeros((t, t))
    w[np.arange(t - 1), np.arange(1, t)] = 1
    w[t - 1, t - 1] = 1
    return w


def test_next_token_score_and_role():
    w = next_head(6)
    assert next_token_score(w) == pytest.approx(1.0)
    assert previous_token_score(w) == pytest.approx(0.0)
    assert next_token_score(previous_head(6)) == pytest.approx(0.0)
    assert next_token_score(np.ones((1, 1))) == 0.0
    tokens = ["[CLS]", "a", "b", "c", "d", "[SEP]"]
    scores = text_role_scores(np.stack([w, previous_head(6)]), tokens, causal=False)
    np.testing.assert_allclose(scores["next"], [1.0, 0.0])
    roles, strength = assign_roles(scores)
    assert roles.tolist() == ["next", "previous"] and strength.tolist() == pytest.approx([1.0, 1.0])
    # a causal head cannot look ahead: the score is not offered, so no head is labelled by it
    assert "next" not in text_role_scores(np.stack([causal_uniform(6)]), tokens, causal=True)


def test_the_sink_counts_every_special_token_not_only_the_first():
    tokens = ["[CLS]", "the", "movie", "was", "fine", "[SEP]"]
    assert [is_special_token(t) for t in tokens] == [True, False, False, False, False, True]
    assert is_special_token("<|endoftext|>") and is_special_token("</s>") and is_special_token("<cls>")
    assert not is_special_token("<unk>") and not is_special_token("[UNK]") and not is_special_token("<3")
    sep = np.zeros((6, 6))
    sep[:, 5] = 0.6  # every query puts 0.6 on [SEP] ...
    sep[:, 1:5] = 0.1  # ... and spreads the rest over the words
    scores = text_role_scores(sep[None], tokens, causal=False)
    assert scores["sink"][0] == pytest.approx(0.6)
    assert sink_score(sep) == pytest.approx(0.0)  # the first key alone: the old score missed it
    assert sink_score(sep, 0, np.array(tokens) == "[SEP]") == pytest.approx(0.6)
    split = np.zeros((6, 6))
    split[:, 0], split[:, 5], split[:, 2] = 0.3, 0.3, 0.4  # most weight (0.6) on [CLS] and [SEP] together
    both = text_role_scores(np.stack([sep, split]), tokens, causal=False)
    assert both["sink"].tolist() == pytest.approx([0.6, 0.6])
    assert assign_roles(both)[0].tolist() == ["sink", "sink"]
    with pytest.raises(ValueError, match="one entry per key"):
        sink_score(sep, 0, np.ones(3, dtype=bool))


def test_a_strong_previous_token_head_is_previous_whatever_else_it_does():
    t = 12
    tokens = ["[CLS]"] + [f"w{i}" for i in range(t - 2)] + ["[SEP]"]
    rest = np.full((t, t), 1 / t)
    heads = np.stack([0.9 * previous_head(t) + 0.1 * rest, 0.92 * previous_head(t) + 0.08 * np.eye(t)])
    scores = text_role_scores(heads, tokens, causal=False)
    assert (scores["previous"] >= 0.9).all()
    roles, strength = assign_roles(scores)
    assert roles.tolist() == ["previous", "previous"]
    np.testing.assert_allclose(strength, scores["previous"])
    # a flat row everywhere (broadness 1) with no pattern is broad; a narrow head with none is mixed
    assert assign_roles(text_role_scores(rest[None], tokens, causal=False))[0].tolist() == ["broad"]
