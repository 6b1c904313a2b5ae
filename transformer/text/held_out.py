"""Sentences kept out of every sentiment training here: the 60 everyday English review sentences of
``bench/data/everyday_en.tsv`` (written and labelled before any model was scored on them) and the four
sentences issue 50 reported. Training drops any example equal to one of them after :func:`normalized`,
and ``tests/test_everyday_en.py`` checks that no generated training sentence holds one.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

EVERYDAY_EN = Path(__file__).resolve().parents[2] / "bench" / "data" / "everyday_en.tsv"
# issue 50's four: the model was sure where it could not be (two have no clear label, see the bench)
ISSUE_SENTENCES = (
    "I've seen better.",
    "It was okay, I guess.",
    "10/10 would watch again",
    "Not the best, not the worst.",
)


@dataclass(frozen=True)
class Sentence:
    text: str
    label: int  # 0 negative, 1 positive
    kind: str  # number, short, everyday, contrast, hedged, ironic


def load_everyday(path: Path = EVERYDAY_EN) -> list[Sentence]:
    """The held-out sentences in file order (header ``label<TAB>kind<TAB>text``)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    labels = {"negative": 0, "positive": 1}
    return [Sentence(r["text"], labels[r["label"]], r["kind"]) for r in rows]


def normalized(text: str) -> str:
    """Lower-case letters and digits, one space between runs; SST-2's split "n't" joined back
    ("did n't" and "didn't" both become "didnt")."""
    text = text.lower().replace("n't", "nt").replace(" nt ", "nt ")
    return re.sub(r"[^a-z0-9]+", " ", text).strip()


def held_out_keys() -> set[str]:
    return {normalized(s.text) for s in load_everyday()} | {normalized(t) for t in ISSUE_SENTENCES}


def leaks(texts: Iterable[str], contained: bool = False) -> list[str]:
    """The texts equal to a held-out sentence (``contained``: also those that hold one inside)."""
    keys = held_out_keys()
    out = []
    for text in texts:
        n = normalized(text)
        padded = f" {n} "
        if n in keys or (contained and any(f" {k} " in padded for k in keys)):
            out.append(text)
    return out


def drop_held_out(examples: list) -> list:
    """``examples`` without those whose text equals a held-out sentence."""
    keys = held_out_keys()
    return [ex for ex in examples if normalized(ex.text) not in keys]
