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
    """Each copied digit -> the source digit it comes from, month digits -> the month name when
    written out (:func:`dates.read_date`); nothing for a source that spells no date."""
    reading = dates.read_date(source)
    by_char = reading.alignment() if reading is not None else []
    return [by_char[j] if j < len(by_char) else None for j in range(len(target))]
