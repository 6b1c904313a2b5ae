"""The queries and keys of one layer's heads over many sentences, projected to 2-D together (PCA), as
AttentionViz draws them: heads that do the same job land near each other.

Queries and keys come from the forward's own ``HeadWeights`` (B, H, T, d_k) (rotated, where a
model rotates them); no padding enters the picture (see :func:`layer_vectors`). Before the
projection each head's keys are moved so that their mean is its queries' mean (a query's score
with every key changes by the same amount, so the softmax, and what the head does, is unchanged),
which keeps a head's queries and keys in one cloud, as AttentionViz does.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

QUERY, KEY = "query", "key"
BATCH_BYTES = 64_000_000  # every layer's attention weights of one batch of sentences, at most
WORD, PUNCTUATION, NUMBER, SPECIAL = "word", "punctuation", "number", "special"


@dataclass(frozen=True)
class HeadSpace:
    """N points: ``xy`` (N, 2) the projection; ``head`` (N,), ``role`` (N,) "query" / "key",
    ``sentence`` (N,) and ``position`` (N,) where the vector came from; ``explained`` (2,) the share
    of variance each axis keeps. ``attention[s]`` (H, T_s, T_s) the layer's weights on sentence s."""

    xy: np.ndarray
    head: np.ndarray
    role: np.ndarray
    sentence: np.ndarray
    position: np.ndarray
    explained: np.ndarray
    attention: list[np.ndarray]


def project(
    queries: Sequence[np.ndarray], keys: Sequence[np.ndarray], attention=None, centre: bool = True
) -> HeadSpace:
    """queries, keys: per sentence (H, T_s, d_k) arrays -> every head's queries and keys in one 2-D PCA."""
    if not queries or len(queries) != len(keys):
        raise ValueError("Give the queries and keys of at least one sentence, as many of each.")
    q = np.concatenate([a.transpose(1, 0, 2) for a in queries]).astype(np.float64)  # (N_q, H, d_k)
    k = np.concatenate([a.transpose(1, 0, 2) for a in keys]).astype(np.float64)
    if centre:
        k = k - k.mean(0, keepdims=True) + q.mean(0, keepdims=True)
    heads = q.shape[1]
    vectors = np.concatenate(
        [q.transpose(1, 0, 2).reshape(-1, q.shape[-1]), k.transpose(1, 0, 2).reshape(-1, k.shape[-1])]
    )
    xy, explained = _pca(vectors, 2)
    sentence_q, position_q = _where(queries)
    sentence_k, position_k = _where(keys)
    n_q, n_k = len(sentence_q), len(sentence_k)
    return HeadSpace(
        xy,
        np.concatenate([np.repeat(np.arange(heads), n_q), np.repeat(np.arange(heads), n_k)]),
        np.array([QUERY] * (heads * n_q) + [KEY] * (heads * n_k)),
        np.concatenate([np.tile(sentence_q, heads), np.tile(sentence_k, heads)]),
        np.concatenate([np.tile(position_q, heads), np.tile(position_k, heads)]),
        explained,
        list(attention or []),
    )


def _pca(vectors: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, d) -> (the first ``n`` principal coordinates (N, n) float32, their shares of the variance (n,)).
    From the eigenvectors of the d × d scatter matrix (N is thousands, d a head's width: far cheaper
    than an SVD of the vectors), in torch so it keeps to torch's threads (numpy's BLAS starts its own,
    which stalled for up to a second on a loaded server). Signs follow scikit-learn's ``svd_flip``
    (each axis's largest loading positive), so a picture does not flip between runs."""
    x = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float64))
    centred = x - x.mean(0, keepdim=True)
    values, vecs = torch.linalg.eigh(centred.T @ centred)  # ascending
    order = torch.argsort(values, descending=True)[:n]
    axes = vecs[:, order].T  # (n, d)
    axes = axes * torch.sign(axes.gather(1, axes.abs().argmax(1, keepdim=True)))
    share = values[order].clamp(min=0) / values.clamp(min=0).sum().clamp(min=1e-30)
    return (centred @ axes.T).float().numpy(), share.float().numpy()


def _where(per_sentence: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(sentence, position) of every token of the sentences, in order."""
    sentence = np.concatenate([np.full(a.shape[1], s) for s, a in enumerate(per_sentence)])
    position = np.concatenate([np.arange(a.shape[1]) for a in per_sentence])
    return sentence, position


@torch.no_grad()
def layer_vectors(
    model: nn.Module, ids: Sequence[Sequence[int]], layer: int, run, causal: bool = False, budget: int = BATCH_BYTES
) -> tuple[list, list, list]:
    """(queries, keys, weights) of ``layer`` for each input: (H, T, d_k), (H, T, d_k), (H, T, T).
    ``run(ids (B, T))`` is the model's forward with weights kept, returning its list of HeadWeights.
    Each input runs alone, except in a ``causal`` model, where the inputs run in batches padded at
    the end (a position never sees the ones after it, so the padding changes none of the real rows),
    as many per batch as keep every layer's weights (B × L × H × T × T floats) within ``budget``."""
    device = next(model.parameters()).device
    if causal and ids:
        rows = []
        for group in _batches(model, ids, budget):
            longest = max(len(one) for one in group)
            batch = torch.tensor([list(one) + [0] * (longest - len(one)) for one in group], device=device)
            record = run(batch)[layer]
            rows += [(record, i, len(one)) for i, one in enumerate(group)]
    else:
        rows = [(run(torch.tensor([list(one)], device=device))[layer], 0, len(one)) for one in ids]
    queries = [r.queries[i, :, :n].float().cpu().numpy() for r, i, n in rows]
    keys = [r.keys[i, :, :n].float().cpu().numpy() for r, i, n in rows]
    weights = [r.weights[i, :, :n, :n].float().cpu().numpy() for r, i, n in rows]
    return queries, keys, weights


def _batches(model: nn.Module, ids: Sequence[Sequence[int]], budget: int) -> list[list[Sequence[int]]]:
    """The inputs in order, grouped so that each group's weights (B × L × H × T_longest²) fit ``budget``
    (an input larger than that alone)."""
    cfg = model.config
    per_cell = 4 * cfg.num_layers * cfg.num_heads
    groups: list[list[Sequence[int]]] = [[]]
    for one in ids:
        group = groups[-1]
        longest = max([len(one), *map(len, group)])
        if group and per_cell * longest * longest * (len(group) + 1) > budget:
            groups.append([one])
        else:
            group.append(one)
    return groups


def token_kind(token: str, special: bool = False) -> str:
    """ "special" (a token the tokenizer adds), "punctuation", "number" or "word"."""
    text = token.strip().lstrip("Ġ▁␣#")
    if special or not text:
        return SPECIAL
    if all(unicodedata.category(c).startswith("P") or unicodedata.category(c).startswith("S") for c in text):
        return PUNCTUATION
    if all(c.isdigit() for c in text):
        return NUMBER
    return WORD
