"""Heads across many sentences: a constructed set with two known head families (their queries and keys
in two different regions) is split by the first PCA axis; keys are moved onto their queries' mean
per head without changing any attention; each point knows its head, role, sentence and position."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.bundle import load_bundle
from transformer.core.bpe_text import encode_prompt
from transformer.residual.head_space import KEY, QUERY, layer_vectors, project, token_kind

ROOT = Path(__file__).resolve().parent.parent


def two_families(seed: int = 0, sentences: int = 6, heads: int = 4, d_k: int = 8):
    """Heads 0, 1 draw their queries and keys around one centre, heads 2, 3 around another."""
    rng = np.random.default_rng(seed)
    centres = np.zeros((heads, d_k))
    centres[:2, 0], centres[2:, 0] = 6.0, -6.0
    queries, keys = [], []
    for _ in range(sentences):
        length = int(rng.integers(3, 9))
        queries.append(centres[:, None] + rng.normal(0, 1, (heads, length, d_k)))
        keys.append(centres[:, None] + rng.normal(0, 1, (heads, length, d_k)))
    return queries, keys


def test_pca_separates_two_known_head_families():
    queries, keys = two_families()
    space = project(queries, keys)
    first = space.xy[:, 0]
    family = space.head < 2
    assert first[family].max() < first[~family].min() or first[~family].max() < first[family].min()
    assert space.explained[0] > 0.5


def test_every_point_knows_where_it_came_from():
    queries, keys = two_families(sentences=3)
    space = project(queries, keys)
    tokens = sum(q.shape[1] for q in queries)
    assert space.xy.shape == (2 * 4 * tokens, 2)
    assert (space.role == QUERY).sum() == (space.role == KEY).sum() == 4 * tokens
    # the first query point: head 0, sentence 0, position 0; the last key point: head 3, last sentence's last token
    assert (space.head[0], space.sentence[0], space.position[0]) == (0, 0, 0)
    assert (space.head[-1], space.sentence[-1], space.position[-1]) == (3, 2, keys[-1].shape[1] - 1)


def test_centring_moves_keys_onto_queries_without_changing_attention():
    rng = np.random.default_rng(1)
    q, k = rng.normal(0, 1, (1, 5, 4)), rng.normal(3, 1, (1, 5, 4))
    space = project([q], [k], centre=True)
    keys, queries = space.xy[space.role == KEY], space.xy[space.role == QUERY]
    np.testing.assert_allclose(keys.mean(0), queries.mean(0), atol=1e-5)
    shift = q.mean(1) - k.mean(1)  # (1, d): every query's scores change by one constant: same softmax
    scores, moved = q[0] @ k[0].T, q[0] @ (k[0] + shift).T
    np.testing.assert_allclose(scores - scores[:, :1], moved - moved[:, :1], atol=1e-9)


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="at least one sentence"):
        project([], [])


@pytest.mark.parametrize(
    "token,special,kind",
    [("movie", False, "word"), ("Ġ,", False, "punctuation"), ("2021", False, "number"), ("[CLS]", True, "special")],
)
def test_token_kinds(token, special, kind):
    assert token_kind(token, special) == kind


def test_bundled_lm_layer_vectors_shapes():
    torch.set_num_threads(1)
    loaded = load_bundle(ROOT / "assets" / "models" / "review-lm")
    model = loaded.model.eval()
    ids = [encode_prompt(loaded.lm_tokenizer, text, 128).ids for text in ("a good film", "the plot was thin , sadly")]
    queries, keys, weights = layer_vectors(model, ids, 1, lambda x: model(x, need_weights=True).attention)
    assert [q.shape for q in queries] == [(4, len(i), 32) for i in ids]
    np.testing.assert_allclose(weights[1].sum(-1), 1.0, atol=1e-5)
    assert project(queries, keys, weights).attention[1].shape == (4, len(ids[1]), len(ids[1]))


def test_projection_equals_scikit_learn_pca():
    sklearn = pytest.importorskip("sklearn.decomposition")
    queries, keys = two_families(seed=3)
    space = project(queries, keys, centre=False)
    vectors = np.concatenate(
        [
            np.concatenate([a.transpose(1, 0, 2) for a in side]).transpose(1, 0, 2).reshape(-1, 8)
            for side in (queries, keys)
        ]
    )
    pca = sklearn.PCA(n_components=2, svd_solver="full").fit(vectors)
    np.testing.assert_allclose(space.xy, pca.transform(vectors), atol=1e-4)
    np.testing.assert_allclose(space.explained, pca.explained_variance_ratio_, atol=1e-6)


def test_causal_batch_gives_each_sentence_alone():
    """The language model's sentences run as one padded batch: the same vectors as one by one."""
    torch.set_num_threads(1)
    loaded = load_bundle(ROOT / "assets" / "models" / "review-lm")
    model = loaded.model.eval()
    ids = [encode_prompt(loaded.lm_tokenizer, text, 128).ids for text in ("a good film , really", "bad", "the end")]

    def run(x):
        return model(x, need_weights=True).attention

    alone, batched = layer_vectors(model, ids, 0, run), layer_vectors(model, ids, 0, run, causal=True)
    for one, other in zip(alone, batched):
        for a, b in zip(one, other):
            np.testing.assert_allclose(a, b, atol=1e-5)
