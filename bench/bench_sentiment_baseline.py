"""The bar a sentiment Transformer has to clear: TF-IDF + logistic regression trained on the same training
split, scored on the same test data.

- ``--dataset nsmc``: character 1–4-grams + word 1–2-grams (the bar the data README states: 0.872);
- ``--dataset imdb+sst2``: word 1–2-grams on IMDB train + SST-2 train (validation carved as in training), scored
  on IMDB test and on the held-out SST-2 sentences; also on a few hand-written negation/contrast sentences.

    python bench/bench_sentiment_baseline.py --dataset nsmc --out bench/results/baseline_nsmc.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sentiment_probes import GROUPS  # noqa: E402
from shared import write_report  # noqa: E402

from transformer.datasets.imdb import default_imdb_path, load_imdb, train_val_split  # noqa: E402
from transformer.text.contrast import contrast_sentences  # noqa: E402
from transformer.text.corpora import default_nsmc_dir, default_sst2_path, load_nsmc, load_sst2  # noqa: E402
from transformer.text.ngram_teacher import C, word_pairs_vectorizer  # noqa: E402


def vectorizer(dataset: str):
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer

    words = word_pairs_vectorizer()
    if dataset != "nsmc":
        return words
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), min_df=2, sublinear_tf=True, max_features=400_000)

    class Both:
        def fit_transform(self, texts):
            return hstack([words.fit_transform(texts), chars.fit_transform(texts)]).tocsr()

        def transform(self, texts):
            return hstack([words.transform(texts), chars.transform(texts)]).tocsr()

    return Both()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=["nsmc", "imdb+sst2"], default="nsmc")
    p.add_argument("--contrast", type=int, default=0, help="template sentences added to training, as in training")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from sklearn.linear_model import LogisticRegression

    started = time.perf_counter()
    if args.dataset == "nsmc":
        train, _ = train_val_split(load_nsmc(default_nsmc_dir(), "train"), 0.1, 13)
        tests = {"nsmc_test": load_nsmc(default_nsmc_dir(), "test")}
    else:
        imdb_train, _ = train_val_split(load_imdb(default_imdb_path(), "train"), 0.1, 13)
        sst_train, sst_val = train_val_split(load_sst2(default_sst2_path()), 0.1, 13)
        train = imdb_train + sst_train + contrast_sentences(args.contrast, 13)
        tests = {"imdb_test": load_imdb(default_imdb_path(), "test"), "sst2_held_out": sst_val[1::2]}
    vec = vectorizer(args.dataset)
    x = vec.fit_transform([ex.text.lower() for ex in train])
    model = LogisticRegression(C=C, max_iter=2000).fit(x, [ex.label for ex in train])
    report = {"dataset": args.dataset, "train": len(train), "contrast_sentences": args.contrast, "accuracy": {}}
    for name, examples in tests.items():
        predicted = model.predict(vec.transform([ex.text.lower() for ex in examples]))
        report["accuracy"][name] = round(float((predicted == [ex.label for ex in examples]).mean()), 4)
    if args.dataset != "nsmc":
        for group, probes in GROUPS.items():
            predicted = model.predict(vec.transform(list(probes)))
            report[f"probes_{group}"] = {text: int(p) for text, p in zip(probes, predicted)}
            report[f"probes_{group}_right"] = int(sum(int(p) == y for p, y in zip(predicted, probes.values())))
    report["seconds"] = round(time.perf_counter() - started, 1)
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
