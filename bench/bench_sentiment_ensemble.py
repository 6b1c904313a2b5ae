"""How far apart the Transformer and TF-IDF are on IMDB: each alone, and their average.

TF-IDF word 1–2-grams + logistic regression (the bar of ``bench_sentiment_baseline.py``) is fitted on IMDB's
training part (validation carved as in training), the bundled model is read with its own temperature, and
their probabilities are averaged with the Transformer's share w chosen on validation; then test is scored
once. If the two made different mistakes, the average would be well above both; it is not (docs/models.md).

    python bench/bench_sentiment_ensemble.py --model assets/models/imdb-sentiment \\
        --out bench/results/sentiment_ensemble.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from shared import write_report  # noqa: E402

from transformer import load_model  # noqa: E402
from transformer.datasets.imdb import default_imdb_path, load_imdb, train_val_split  # noqa: E402
from transformer.text.calibration import softmax  # noqa: E402
from transformer.text.ngram_teacher import C, word_pairs_vectorizer  # noqa: E402
from transformer.text.predict import predict_logits  # noqa: E402

SHARES = tuple(round(w, 1) for w in np.arange(0.0, 1.01, 0.1))  # the Transformer's share in the average


def accuracy(p: np.ndarray, y: np.ndarray) -> float:
    return round(float(((p > 0.5) == y).mean()), 4)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "assets" / "models" / "imdb-sentiment"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import torch
    from sklearn.linear_model import LogisticRegression

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    train, val = train_val_split(load_imdb(default_imdb_path(), "train"), 0.1, 13)
    test = load_imdb(default_imdb_path(), "test")
    y_val, y_test = np.array([e.label for e in val]), np.array([e.label for e in test])
    vec = word_pairs_vectorizer()
    tfidf = LogisticRegression(C=C, max_iter=2000).fit(
        vec.fit_transform([e.text.lower() for e in train]), [e.label for e in train]
    )
    ngram_val = tfidf.predict_proba(vec.transform([e.text.lower() for e in val]))[:, 1]
    ngram_test = tfidf.predict_proba(vec.transform([e.text.lower() for e in test]))[:, 1]
    loaded = load_model(args.model)
    t = loaded.config.temperature or 1.0
    with torch.inference_mode():
        model_val = softmax(predict_logits(loaded, [e.text for e in val]), t)[:, 1]
        model_test = softmax(predict_logits(loaded, [e.text for e in test]), t)[:, 1]
    by_share = {str(w): accuracy(w * model_val + (1 - w) * ngram_val, y_val) for w in SHARES}
    chosen = max(SHARES, key=lambda w: (by_share[str(w)], -abs(w - 0.5)))
    report = {
        "model": Path(args.model).name,
        "temperature": t,
        "validation": {"transformer": accuracy(model_val, y_val), "tfidf": accuracy(ngram_val, y_val)},
        "validation_by_transformer_share": by_share,
        "chosen_share": chosen,
        "test": {
            "transformer": accuracy(model_test, y_test),
            "tfidf": accuracy(ngram_test, y_test),
            "average": accuracy(chosen * model_test + (1 - chosen) * ngram_test, y_test),
            "both_wrong": round(float((((model_test > 0.5) != y_test) & ((ngram_test > 0.5) != y_test)).mean()), 4),
            "one_wrong": round(float((((model_test > 0.5) != y_test) ^ ((ngram_test > 0.5) != y_test)).mean()), 4),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
