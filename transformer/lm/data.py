"""Review text for the language model: IMDB train reviews (English) and NSMC-style train reviews
(Korean), each split into train and validation by a hash of the text (stable across runs)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ..datasets.imdb import default_imdb_path, load_imdb

NSMC_TRAIN = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "nsmc" / "nsmc_style_train.tsv.gz"
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_SPACES = re.compile(r"[ \t]+")


@dataclass(frozen=True)
class Corpus:
    """Train and validation documents per language ("en", "ko")."""

    train: dict[str, list[str]]
    val: dict[str, list[str]]

    def sizes(self) -> dict[str, dict[str, int]]:
        return {
            split: {lang: len(docs) for lang, docs in part.items()}
            for split, part in (("train", self.train), ("val", self.val))
        }


def clean(text: str) -> str:
    """HTML line breaks become spaces; runs of spaces collapse; ends stripped."""
    return _SPACES.sub(" ", _BREAK.sub(" ", text)).strip()


def read_nsmc(path: str | Path) -> list[str]:
    """The ``document`` column of an NSMC-style gzip'd TSV (header ``id, document, label``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: pass the NSMC-style train file with --korean PATH.")
    with gzip.open(path, "rb") as f:
        reader = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE)
        if reader.fieldnames is None or "document" not in reader.fieldnames:
            raise ValueError(f"{path.name} has no 'document' column (expected the header id, document, label).")
        return [row["document"] for row in reader if row.get("document")]


def is_validation(text: str, fraction: float, seed: int = 0) -> bool:
    """True for about ``fraction`` of texts, chosen by a hash of the text (order-independent)."""
    digest = hashlib.sha256(f"{seed}\x00{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split(docs: list[str], fraction: float, seed: int = 0) -> tuple[list[str], list[str]]:
    train, val = [], []
    for doc in docs:
        (val if is_validation(doc, fraction, seed) else train).append(doc)
    return train, val


def load_corpus(
    imdb: str | Path | None = None,
    korean: str | Path = NSMC_TRAIN,
    val_fraction: float = 0.02,
    limit: int = 0,
) -> Corpus:
    """Both languages' train files, cleaned, split into train / validation. ``limit`` > 0 keeps the
    first ``limit`` documents of each language (for smoke runs and tests)."""
    english = [clean(ex.text) for ex in load_imdb(imdb or default_imdb_path(), "train")]
    korean_docs = [clean(t) for t in read_nsmc(korean)]
    if limit > 0:
        english, korean_docs = english[:limit], korean_docs[:limit]
    en_train, en_val = split(english, val_fraction)
    ko_train, ko_val = split(korean_docs, val_fraction)
    return Corpus({"en": en_train, "ko": ko_train}, {"en": en_val, "ko": ko_val})
