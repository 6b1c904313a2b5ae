"""Can a temperature alone make minilm-sentiment honest on everyday sentences? Raw logits (512 tokens) on the 60
everyday sentences, issue 50's four, SST-2 validation (692), IMDB validation (training's 1,500 at 512 tokens) and
generated score / comma-contrast sentences (transformer.text.contrast, seeds 101/102, never trained on); then
accuracy, NLL, ECE and wrong answers with confidence >= 0.9 at: T = 1 (raw), the shipped T, T fitted on SST-2
validation alone, T fitted on validation + the generated sentences. No temperature is fitted on the 60.

    python bench/bench_everyday_temperature.py assets/models/minilm-sentiment \
        --out bench/results/everyday_en_temperature.json
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from shared import write_report  # noqa: E402

from transformer.datasets.imdb import Example, default_imdb_path, load_imdb, train_val_split  # noqa: E402
from transformer.hf.importer import load_hf_folder  # noqa: E402
from transformer.text.calibration import (  # noqa: E402
    expected_calibration_error,
    fit_temperature,
    negative_log_likelihood,
    softmax,
)
from transformer.text.contrast import comma_contrast_sentences, number_sentences  # noqa: E402
from transformer.text.corpora import default_sst2_path, load_sst2  # noqa: E402
from transformer.text.finetune_encoder import encode, logits_of  # noqa: E402
from transformer.text.held_out import ISSUE_SENTENCES, load_everyday  # noqa: E402

SETS = ("everyday", "sst2_val", "imdb_val", "gen_numbers", "gen_comma")


def logits(folder: str) -> tuple[dict, float]:
    loaded = load_hf_folder(Path(folder), "cpu")
    encoder, pad_id, model = loaded.text_encoder(), loaded.config.pad_id, loaded.model
    sets = {"everyday": [Example(s.text, s.label) for s in load_everyday()]}
    sets["issue"] = [Example(t, 0) for t in ISSUE_SENTENCES]
    _, sets["sst2_val"] = train_val_split(load_sst2(default_sst2_path()), 0.1, 13)
    sets["gen_numbers"], sets["gen_comma"] = number_sentences(1000, 101), comma_contrast_sentences(1000, 102)
    rng = random.Random(13)  # training's IMDB samples: its 5,000 training reviews are drawn first
    train, val = train_val_split(load_imdb(default_imdb_path(), "train"), 0.1, 13)
    rng.sample(train, 5000)
    sets["imdb_val"] = rng.sample(val, 1500)
    out = {}
    for name, examples in sets.items():
        out[name] = logits_of(model, encode(encoder, examples, 512), pad_id)
        out[name + "_labels"] = np.array([ex.label for ex in examples])
    return out, float(loaded.config.temperature)


def scores(d: dict, name: str, temperature: float) -> dict:
    z, y = d[name], d[name + "_labels"]
    p = softmax(z, temperature)
    wrong = p.argmax(1) != y
    return {
        "accuracy": round(float((~wrong).mean()), 4),
        "nll": round(negative_log_likelihood(z, y, temperature), 4),
        "ece": round(expected_calibration_error(p, y), 4),
        "wrong_sure": int((wrong & (p.max(1) >= 0.9)).sum()),
        "count": len(y),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    d, shipped = logits(args.model)

    def joined(*names):
        return np.concatenate([d[n] for n in names]), np.concatenate([d[n + "_labels"] for n in names])

    options = {
        "raw": 1.0,
        "shipped": shipped,
        "fit_sst2_validation": fit_temperature(d["sst2_val"], d["sst2_val_labels"]),
        "fit_validation_plus_generated": fit_temperature(*joined("imdb_val", "sst2_val", "gen_numbers", "gen_comma")),
    }
    report = {"model": args.model, "sure": 0.9, "options": {}}
    for name, t in options.items():
        row = {"temperature": round(t, 4), **{s: scores(d, s, t) for s in SETS}}
        row["issue_sentences_p_positive"] = dict(
            zip(ISSUE_SENTENCES, (round(float(q[1]), 4) for q in softmax(d["issue"], t)))
        )
        report["options"][name] = row
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
