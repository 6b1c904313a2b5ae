"""How many films IMDB's validation split shares with the training part, carved review by review or as runs.

A film is recognised by its rare capitalised names (actors, characters, titles: words of 4+ letters starting
with a capital that occur in 2–40 of the 50,000 reviews). Two reviews sharing two or more such names very
likely review the same film. The archive has no film ids, but its review ids run film by film; measured here:

- how often neighbouring ids share a rare name, against random pairs;
- the share of validation reviews sharing ≥ 2 rare names with some training review, for single-review
  validation (``block`` 1, every bundled model) and runs of 25 and 100 ids (``--val-block``), and the same
  for 2,500 test reviews (other films by construction) against the training part.

    python bench/bench_imdb_film_overlap.py --out bench/results/imdb_film_overlap.json
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from shared import write_report  # noqa: E402

from transformer.datasets.imdb import default_imdb_path, load_imdb, train_val_split  # noqa: E402

NAME = re.compile(r"\b[A-Z][a-z]{3,}\b")
RARE = (2, 40)  # in how many reviews a name occurs to count as rare


def rare_names(texts: list[str]) -> list[frozenset[str]]:
    """Per text, its capitalised names that occur in 2–40 of ``texts``."""
    names = [set(NAME.findall(t)) for t in texts]
    count: dict[str, int] = defaultdict(int)
    for found in names:
        for name in found:
            count[name] += 1
    return [frozenset(n for n in found if RARE[0] <= count[n] <= RARE[1]) for found in names]


def share_with(part: list[frozenset[str]], training: list[frozenset[str]]) -> float:
    """Share of ``part`` sharing ≥ 2 rare names with at least one text of ``training``."""
    index: dict[str, set[int]] = defaultdict(set)
    for k, found in enumerate(training):
        for name in found:
            index[name].add(k)
    hits = 0
    for found in part:
        together: dict[int, int] = defaultdict(int)
        for name in found:
            for k in index[name]:
                together[k] += 1
        hits += any(c >= 2 for c in together.values())
    return round(hits / max(1, len(part)), 3)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    started = time.perf_counter()
    train_all, test = load_imdb(default_imdb_path(), "train"), load_imdb(default_imdb_path(), "test")
    names = rare_names([e.text for e in train_all + test])
    of = {id(e): n for e, n in zip(train_all + test, names)}
    negative = names[: sum(e.label == 0 for e in train_all)]  # one label's reviews, in id order
    rng = random.Random(0)
    pairs = range(len(negative) - 1)
    report = {
        "neighbouring_ids_share_a_rare_name": round(
            sum(bool(negative[i] & negative[i + 1]) for i in pairs) / len(pairs), 4
        ),
        "random_pairs_share_a_rare_name": round(
            sum(bool(negative[i] & negative[rng.randrange(len(negative))]) for i in pairs) / len(pairs), 4
        ),
        "validation_sharing_2_rare_names_with_training": {},
    }
    for block in (1, 25, 100):
        training, validation = train_val_split(train_all, 0.1, 13, block)
        report["validation_sharing_2_rare_names_with_training"][f"runs of {block}"] = share_with(
            [of[id(e)] for e in validation], [of[id(e)] for e in training]
        )
    training, _ = train_val_split(train_all, 0.1, 13)
    report["test_sharing_2_rare_names_with_training"] = share_with(
        [of[id(e)] for e in test[::10]], [of[id(e)] for e in training]
    )
    report["seconds"] = round(time.perf_counter() - started, 1)
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
