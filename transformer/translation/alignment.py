"""How well cross-attention heads follow the gold word alignment, and the reference alignment
of any sentence the lexicon can read (typed sentences have no generator pair).

Accuracy of a head = share of content target tokens (those with a gold source position)
whose cross-attention row has its maximum at that source position. Decoder row j predicts
target token j (row 0 reads ``<bos>``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from . import dates
from . import lexicon as lx


def head_accuracy(cross: torch.Tensor, gold: torch.Tensor) -> tuple[np.ndarray, int]:
    """cross (B, L, H, T_t, T_s) weights, gold (B, T_t) source positions (-1: none) ->
    (accuracy (L, H), number of scored tokens)."""
    hit = cross.argmax(-1) == gold[:, None, None, :]  # (B, L, H, T_t)
    scored = (gold >= 0)[:, None, None, :]
    count = int(scored[:, 0, 0].sum())
    acc = (hit & scored).sum(dim=(0, 3)).double() / max(count, 1)
    return acc.numpy(), count


def sentence_scores(cross: np.ndarray, alignment: Sequence[int | None]) -> np.ndarray:
    """cross (L, H, T_t, T_s) of one sentence, alignment[j] for target token j -> (L, H) share of
    aligned tokens whose row's argmax is the gold position (NaN when none is aligned)."""
    rows = [j for j, a in enumerate(alignment) if a is not None and j < cross.shape[2]]
    if not rows:
        return np.full(cross.shape[:2], np.nan)
    gold = np.array([alignment[j] for j in rows])
    return (cross[:, :, rows].argmax(-1) == gold).mean(-1)


def reference_alignment(task: str, source: Sequence[str], target: Sequence[str]) -> list[int | None]:
    """The gold source position of each target token that the task's rules can tell, else None."""
    if task == "dates":
        return _date_alignment(source, target)
    korean_to_english = {k: e for e, k in lx.SUBJECTS + lx.OBJECTS + lx.VERBS + lx.ADJECTIVES + lx.TIMES}
    korean_to_english |= {k: n for _, _, n, k in lx.PLACES}
    used: set[int] = set()
    out: list[int | None] = []
    for token in target:
        english = korean_to_english.get(token)
        pos = next((i for i, w in enumerate(source) if w == english and i not in used), None)
        if pos is not None:
            used.add(pos)
        out.append(pos)
    return out


def _date_alignment(source: Sequence[str], target: Sequence[str]) -> list[int | None]:
    """Year digits -> the 4-digit word, month digits -> the month name (or the number between
    dots), day digits -> the day (number or ordinal) that is not the month."""
    year = next((i for i, w in enumerate(source) if len(w) == 4 and w.isdigit()), None)
    month = next((i for i, w in enumerate(source) if w in dates.MONTHS or w in dates.MONTH_ABBR), None)
    numbers = [i for i, w in enumerate(source) if i != year and (w.isdigit() or w in _ORDINALS)]
    if month is None and "." in source:
        month = next((i for i in numbers if i > 0 and source[i - 1] == "."), None)
    day = next((i for i in numbers if i != month), None)
    by_char = [year] * 4 + [None] + [month] * 2 + [None] + [day] * 2
    return [by_char[j] if j < len(by_char) else None for j in range(len(target))]


_ORDINALS = frozenset(dates.ordinal(d) for d in range(1, 32))
