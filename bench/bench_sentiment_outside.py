"""Bundled English sentiment models one step outside IMDB: accuracy on the held-out SST-2 sentences (the same
346 as ``bench_sentiment_baseline.py``) and on the hand-written negation/contrast probes of
``bench/sentiment_probes.py`` (right answers per group).

    python bench/bench_sentiment_outside.py assets/models/imdb-sentiment assets/models/imdb-sst2-sentiment \
        --out bench/results/sentiment_outside.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sentiment_probes import GROUPS  # noqa: E402
from shared import write_report  # noqa: E402

from transformer import load_model  # noqa: E402
from transformer.datasets.imdb import train_val_split  # noqa: E402
from transformer.text.corpora import default_sst2_path, load_sst2  # noqa: E402
from transformer.text.predict import predict_batch  # noqa: E402


def score(path: str, held_out) -> dict:
    """Accuracy on ``held_out`` and the probes' answers for the bundled model at ``path``."""
    loaded = load_model(path)
    names = list(loaded.config.label_names)
    batch = predict_batch(loaded, [ex.text for ex in held_out], 512)
    right = [names.index(p.label) == ex.label for p, ex in zip(batch.predictions, held_out)]
    report = {"sst2_held_out": round(sum(right) / len(right), 4)}
    for group, probes in GROUPS.items():
        batch = predict_batch(loaded, list(probes), 512)
        answers = {text: names.index(p.label) for text, p in zip(probes, batch.predictions)}
        report[f"probes_{group}"] = answers
        report[f"probes_{group}_right"] = sum(answers[text] == label for text, label in probes.items())
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    _, sst_val = train_val_split(load_sst2(default_sst2_path()), 0.1, 13)
    held_out = sst_val[1::2]  # the half the calibration does not fit on
    report = {"sentences": len(held_out), "models": {path: score(path, held_out) for path in args.models}}
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
