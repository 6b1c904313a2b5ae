"""English sentiment models on 60 everyday review sentences kept out of training
(``bench/data/everyday_en.tsv``: numbers, short, hedged, ironic, contrasts without "but"), with the
probabilities the app shows (the model's fitted temperature): accuracy, NLL, ECE (10 bins; on 60 sentences a
rough figure), and how many are wrong with confidence >= 0.9. Beside them: issue 50's four sentences, SST-2's
692 validation sentences (carved from train, seed 13) and, on request, IMDB's validation sample (1,500 reviews
carved from train, seed 13, as training's) or test sample (5,000, seed 13: score it once, for the model shipped).

    python bench/bench_everyday.py assets/models/minilm-sentiment --out bench/results/everyday_en.json
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from shared import write_report  # noqa: E402

from transformer import load_model  # noqa: E402
from transformer.datasets.imdb import default_imdb_path, load_imdb, train_val_split  # noqa: E402
from transformer.text.calibration import expected_calibration_error, rescale  # noqa: E402
from transformer.text.corpora import default_sst2_path, load_sst2  # noqa: E402
from transformer.text.held_out import ISSUE_SENTENCES, load_everyday  # noqa: E402
from transformer.text.predict import predict_batch  # noqa: E402

SURE = 0.9
MAX_TOKENS = 512  # the app's length for this model


def probabilities(loaded, texts: list[str], temperature: float) -> np.ndarray:
    """(N, 2) probabilities at ``temperature`` (1.0: the raw softmax)."""
    batch = predict_batch(loaded, texts, MAX_TOKENS)
    raw = np.stack([p.probabilities for p in batch.predictions])
    return rescale(raw, temperature) if temperature != 1.0 else raw


def scores(p: np.ndarray, labels: np.ndarray) -> dict:
    predicted, confidence = p.argmax(1), p.max(1)
    wrong = predicted != labels
    return {
        "accuracy": round(float((~wrong).mean()), 4),
        "nll": round(float(-np.log(np.clip(p[np.arange(len(labels)), labels], 1e-12, 1)).mean()), 4),
        "ece": round(expected_calibration_error(p, labels), 4),
        "wrong": int(wrong.sum()),
        "wrong_sure": int((wrong & (confidence >= SURE)).sum()),
        "mean_confidence": round(float(confidence.mean()), 4),
    }


def everyday(loaded) -> dict:
    sentences = load_everyday()
    labels = np.array([s.label for s in sentences])
    names = list(loaded.config.label_names)
    temperature = float(loaded.config.temperature)
    raw = probabilities(loaded, [s.text for s in sentences], 1.0)
    shown = rescale(raw, temperature) if temperature != 1.0 else raw
    kinds = sorted({s.kind for s in sentences})
    by_kind = {
        k: round(float(np.mean([shown[i].argmax() == labels[i] for i, s in enumerate(sentences) if s.kind == k])), 4)
        for k in kinds
    }
    rows = [
        {"text": s.text, "label": names[s.label], "p_positive": round(float(shown[i, 1]), 4),
         "right": bool(shown[i].argmax() == s.label)}
        for i, s in enumerate(sentences)
    ]  # fmt: skip
    issue = probabilities(loaded, list(ISSUE_SENTENCES), temperature)
    return {
        "temperature": temperature,
        "calibrated": scores(shown, labels),
        "raw": scores(raw, labels),
        "accuracy_by_kind": by_kind,
        "wrong_sentences": [r for r in rows if not r["right"]],
        "sentences": rows,
        "issue_sentences_p_positive": {t: round(float(p[1]), 4) for t, p in zip(ISSUE_SENTENCES, issue)},
    }


def labelled(loaded, examples, temperature: float) -> dict:
    p = probabilities(loaded, [ex.text for ex in examples], temperature)
    labels = np.array([ex.label for ex in examples])
    return {k: v for k, v in scores(p, labels).items() if k in ("accuracy", "nll", "ece")} | {"count": len(labels)}


def score(path: str, imdb_val: int, imdb_test: int) -> dict:
    loaded = load_model(path)
    temperature = float(loaded.config.temperature)
    report = {"everyday": everyday(loaded)}
    t0 = time.perf_counter()
    _, sst_val = train_val_split(load_sst2(default_sst2_path()), 0.1, 13)
    report["sst2_validation"] = labelled(loaded, sst_val, temperature)
    rng = random.Random(13)  # the same samples as transformer.text.finetune_encoder's load_sets
    if imdb_val or imdb_test:
        imdb_train, val = train_val_split(load_imdb(default_imdb_path(), "train"), 0.1, 13)
        rng.sample(imdb_train, 5000)  # training's sample of 5,000 reviews comes first from the same generator
        val = rng.sample(val, 1500)
        if imdb_val:
            report["imdb_validation"] = labelled(loaded, val[:imdb_val], temperature)
        if imdb_test:
            test = load_imdb(default_imdb_path(), "test")
            report["imdb_test"] = labelled(loaded, rng.sample(test, imdb_test), temperature)
    report["seconds_beyond_everyday"] = round(time.perf_counter() - t0, 1)
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+")
    p.add_argument("--imdb-val", type=int, default=0, help="IMDB validation reviews (of training's 1,500 sample)")
    p.add_argument("--imdb-test", type=int, default=0, help="IMDB test reviews (5000: training's sample); once")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {"sure": SURE, "max_tokens": MAX_TOKENS,
              "models": {m: score(m, args.imdb_val, args.imdb_test) for m in args.models}}  # fmt: skip
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
