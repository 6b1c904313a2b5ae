"""What each attention head does, as scores between 0 and 1 computed from its weights alone.

Every function takes one head's (or a stack of heads') softmax weights ``(..., T_q, T_k)`` — rows
that sum to 1 — and returns a score per head ``(...)``. They know no task and no model; the task
packages add their own (alignment for encoder-decoders, locality for ViT patches).

* previous-token: mean weight from token t to token t-1 (rows t >= 1);
* next-token: mean weight from token t to token t+1 (rows t <= T-2; bidirectional attention only);
* diagonal (same-token): mean weight from token t to itself;
* sink: mean total weight on the first key and on the special tokens a tokenizer adds (``[CLS]``,
  ``[SEP]``, ``<s>``, ``</s>``, ``<|endoftext|>``, ...), where heads with nothing to do park their weight;
* punctuation: mean total weight on keys that are punctuation;
* broadness: mean row entropy divided by the entropy of a uniform row over the keys the query may see;
* induction: on a sequence whose second half repeats the first, the mean weight from each token of
  the second copy to the token that followed its earlier occurrence.
"""

from __future__ import annotations

import re

import numpy as np

ROLES = ("previous", "next", "diagonal", "sink", "punctuation", "broadness", "induction")
# tokens a tokenizer adds around the text (not words of it): keys an idle head parks its weight on;
# the similarity view leaves them out of its token matches
SPECIAL_TOKENS = frozenset(
    {"[CLS]", "[SEP]", "[BOS]", "[EOS]", "<s>", "</s>", "<cls>", "<sep>", "<bos>", "<eos>", "<|endoftext|>"}
)
_ANGLE_PIPE = re.compile(r"^<\|[A-Za-z0-9_]+\|>$")  # <|endoftext|>, <|begin_of_text|>, <|im_start|>


def _check(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim < 2:
        raise ValueError(f"Attention weights must be (..., T_q, T_k); got shape {weights.shape}.")
    return weights


def previous_token_score(weights: np.ndarray) -> np.ndarray:
    """Mean of weights[t, t-1] over t = 1..T-1 (square weights, queries = keys); 0 for T = 1."""
    weights = _check(weights)
    t = min(weights.shape[-2], weights.shape[-1])
    if t < 2:
        return np.zeros(weights.shape[:-2])
    rows = np.arange(1, t)
    return weights[..., rows, rows - 1].mean(-1)


def next_token_score(weights: np.ndarray) -> np.ndarray:
    """Mean of weights[t, t+1] over t = 0..T-2 (square weights, queries = keys); 0 for T = 1.
    Always 0 for a causal head (it may not see the next token)."""
    weights = _check(weights)
    t = min(weights.shape[-2], weights.shape[-1])
    if t < 2:
        return np.zeros(weights.shape[:-2])
    rows = np.arange(t - 1)
    return weights[..., rows, rows + 1].mean(-1)


def diagonal_score(weights: np.ndarray) -> np.ndarray:
    """Mean of weights[t, t] over the square part of the weights."""
    weights = _check(weights)
    t = min(weights.shape[-2], weights.shape[-1])
    rows = np.arange(t)
    return weights[..., rows, rows].mean(-1)


def is_special_token(token: str) -> bool:
    """True for a special token a tokenizer adds around the text ([CLS], [SEP], <s>, </s>, <|endoftext|>, ...)."""
    return token in SPECIAL_TOKENS or bool(_ANGLE_PIPE.match(token))


def sink_score(weights: np.ndarray, first: int = 0, is_sink: np.ndarray | None = None) -> np.ndarray:
    """Mean over queries of the total weight on key ``first`` (the start or class token) and on the
    keys marked in ``is_sink`` (T_k,) bool (e.g. ``[SEP]``); each key counted once."""
    weights = _check(weights)
    marks = np.zeros(weights.shape[-1], dtype=bool) if is_sink is None else np.asarray(is_sink, dtype=bool).copy()
    if marks.shape != (weights.shape[-1],):
        raise ValueError(f"is_sink must have one entry per key ({weights.shape[-1]}); got {marks.shape}.")
    marks[first] = True
    return weights[..., marks].sum(-1).mean(-1)


def punctuation_score(weights: np.ndarray, is_punctuation: np.ndarray) -> np.ndarray:
    """Mean over queries of the total weight on keys marked in ``is_punctuation`` (T_k,) bool; 0 when none is."""
    weights = _check(weights)
    marks = np.asarray(is_punctuation, dtype=bool)
    if marks.shape != (weights.shape[-1],):
        raise ValueError(f"is_punctuation must have one entry per key ({weights.shape[-1]}); got {marks.shape}.")
    return weights[..., marks].sum(-1).mean(-1)


def broadness_score(weights: np.ndarray, causal: bool = False) -> np.ndarray:
    """Mean row entropy over the entropy of a uniform row (1: spread evenly, 0: one key per row).

    ``causal``: row t may see t+1 keys, so its uniform entropy is log(t+1); the first row (one key,
    nothing to spread over) is left out."""
    weights = _check(weights)
    t_q, t_k = weights.shape[-2:]
    p = np.clip(weights, 1e-12, 1.0)
    entropy = -(weights * np.log(p)).sum(-1)  # (..., T_q)
    visible = np.minimum(np.arange(t_q) + 1, t_k) if causal else np.full(t_q, t_k)
    keep = visible > 1
    if not keep.any():
        return np.zeros(weights.shape[:-2])
    return (entropy[..., keep] / np.log(visible[keep])).mean(-1)


def induction_score(weights: np.ndarray, period: int, start: int = 0) -> np.ndarray:
    """Weights on a sequence holding a random span of ``period`` tokens at ``start`` and the same span
    again right after it. Query ``start + period + j`` (the j-th token of the copy) should attend to
    key ``start + j + 1`` (what followed that token the first time); mean over j = 0..period-2."""
    weights = _check(weights)
    if period < 2 or start < 0 or start + 2 * period > min(weights.shape[-2:]):
        raise ValueError(
            f"The weights ({weights.shape[-2]}x{weights.shape[-1]}) do not hold two copies of {period} tokens "
            f"from position {start}."
        )
    j = np.arange(period - 1)
    return weights[..., start + period + j, start + j + 1].mean(-1)


# ---- from scores to one role per head ------------------------------------------------------------------------------
# Scores that describe a pattern: the largest one at or above ROLE_THRESHOLD names the head's role.
PATTERNS = ("previous", "next", "diagonal", "sink", "punctuation", "induction", "alignment", "locality")
ROLE_THRESHOLD = 0.4
BROAD_THRESHOLD = 0.75
# subword markers that are not part of a token's text: byte-level BPE, SentencePiece, WordPiece, the app's ␣
_MARKERS = ("Ġ", "▁", "##", "␣")


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation (Unicode category P*), word-piece markers and spaces aside."""
    import unicodedata

    text = token
    for marker in _MARKERS:
        text = text.replace(marker, "")
    text = text.strip()
    return bool(text) and all(unicodedata.category(ch).startswith("P") for ch in text)


def assign_roles(scores: dict[str, np.ndarray], first: tuple[str, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """scores: name -> (L, H) values in [0, 1] (NaN: not measured). Returns (roles (L, H) of str,
    strength (L, H)): the pattern with the largest score if it reaches ROLE_THRESHOLD (ties go to
    the earlier name in PATTERNS); otherwise "broad" when broadness reaches BROAD_THRESHOLD, else "mixed".
    Patterns come before broadness: a previous-token score of 0.9 names the role however spread
    the remaining weight is, and a head with most of its weight on [CLS]/[SEP] is a sink.

    ``first``: patterns measured on a probe that gives the head something to do (a language model's
    induction and previous-token scores on repeated random tokens): the largest of them that reaches
    ROLE_THRESHOLD names the role before the other patterns are looked at. On a short text a real
    model's induction head rests its weight on the first token (a sink score near 1); on the probe it
    shows what it does when there is something to copy."""
    shape = next(iter(scores.values())).shape
    roles = np.full(shape, "mixed", dtype=object)
    strength = np.zeros(shape)
    for group in (tuple(n for n in PATTERNS if n in first), PATTERNS):
        names = [n for n in group if n in scores]
        if not names:
            continue
        stack = np.stack([np.nan_to_num(np.asarray(scores[n], dtype=np.float64), nan=-1.0) for n in names])
        best = stack.argmax(0)
        top = stack.max(0)
        hit = (top >= ROLE_THRESHOLD) & (roles == "mixed")
        roles[hit] = np.asarray(names, dtype=object)[best[hit]]
        strength[hit] = top[hit]
    if "broadness" in scores:
        broad = (roles == "mixed") & (np.nan_to_num(scores["broadness"]) >= BROAD_THRESHOLD)
        roles[broad] = "broad"
        strength[broad] = np.asarray(scores["broadness"])[broad]
    return roles, strength


def text_role_scores(weights: np.ndarray, tokens: list[str], causal: bool) -> dict[str, np.ndarray]:
    """The scores that any self-attention over text has, for (L, H, T, T) weights over ``tokens``."""
    weights = _check(weights)
    marks = np.array([is_punctuation(tok) for tok in tokens], dtype=bool)
    sinks = np.array([is_special_token(tok) for tok in tokens], dtype=bool)
    scores = {"previous": previous_token_score(weights)}
    if not causal:  # a causal head cannot see the next token: the score would be 0 by construction
        scores["next"] = next_token_score(weights)
    return scores | {
        "diagonal": diagonal_score(weights),
        "sink": sink_score(weights, 0, sinks),
        "punctuation": punctuation_score(weights, marks),
        "broadness": broadness_score(weights, causal),
    }
