"""How Korean is cut into tokens: WordPiece pieces, mecab-ko and kiwipiepy morphemes, and syllables,
compared on the NSMC-style validation reviews.

For each cut: vocabulary size, tokens per review, share of validation tokens its vocabulary lacks,
and tokenisation speed (reviews per second, one thread, interleaved rounds, median and spread); the
validation accuracy of the same small model trained on each cut comes from the comparison runs'
metrics.json (``--runs``, see docs/models.md for the command). Prints one JSON object; ``--out`` writes it.

    python bench/bench_korean_tokenizers.py --runs /tmp/kocmp --out bench/results/korean_tokenizers.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shared import write_report  # noqa: E402

from transformer.core.pieces import PieceSplitter, syllables  # noqa: E402
from transformer.core.tokenizer import Vocab  # noqa: E402
from transformer.datasets.imdb import train_val_split  # noqa: E402
from transformer.text.corpora import default_nsmc_dir, load_nsmc  # noqa: E402
from transformer.text.morphemes import SPLITTERS, available  # noqa: E402

CUTS = ("wordpiece", "mecab", "kiwi", "syllables")


def splitter_for(name: str, runs: Path):
    if name == "wordpiece":
        return PieceSplitter.load(runs / "wordpiece" / "tokenizer.json").split
    if name == "syllables":
        return syllables
    return SPLITTERS[name]()


def startup_seconds(name: str) -> float | None:
    """Seconds to import the analyser and build it in a fresh interpreter (what a page would pay once)."""
    import subprocess

    # the analyser alone: importing transformer would add torch's start-up to the figure
    module = {
        "mecab": "import mecab_ko; mecab_ko.Tagger().parse('영화')",
        "kiwi": "from kiwipiepy import Kiwi; Kiwi().tokenize('영화')",
    }
    if name not in module:
        return None
    code = f"import time; t = time.perf_counter(); {module[name]}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return round(float(done.stdout.strip()), 3) if done.returncode == 0 else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--runs", default="/tmp/kocmp", help="folder with one comparison run per cut (metrics.json, vocab.txt)"
    )
    p.add_argument("--sample", type=int, default=3000, help="validation reviews timed per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)
    runs = Path(args.runs)
    train_all = load_nsmc(default_nsmc_dir(), "train")
    _, val = train_val_split(train_all, 0.1, 13)
    texts = [ex.text for ex in random.Random(0).sample(val, min(args.sample, len(val)))]
    cuts = [c for c in CUTS if c not in ("mecab", "kiwi") or c in available()]
    split = {c: splitter_for(c, runs) for c in cuts}
    timings: dict[str, list[float]] = {c: [] for c in cuts}
    for _ in range(args.rounds):  # interleaved: each round times every cut once
        for c in cuts:
            t0 = time.perf_counter()
            for text in texts:
                split[c](text)
            timings[c].append(len(texts) / (time.perf_counter() - t0))
    report = {"reviews_timed": len(texts), "rounds": args.rounds, "cuts": {}}
    for c in cuts:
        tokens = [split[c](text) for text in texts]
        vocab = Vocab.load(runs / c / "vocab.txt") if (runs / c / "vocab.txt").is_file() else None
        count = sum(len(t) for t in tokens)
        unknown = sum(tok not in vocab for t in tokens for tok in t) if vocab is not None else None
        metrics_path = runs / c / "metrics.json"
        metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else {}
        report["cuts"][c] = {
            "validation_accuracy": metrics.get("metrics", {}).get("best_validation_accuracy"),
            "vocabulary_size": len(vocab) if vocab is not None else None,
            "tokens_per_review": round(count / len(texts), 2),
            "unknown_share": round(unknown / count, 4) if unknown is not None else None,
            "reviews_per_second_median": round(statistics.median(timings[c])),
            "reviews_per_second_range": [round(min(timings[c])), round(max(timings[c]))],
            "startup_seconds": startup_seconds(c),
            "training_seconds": metrics.get("training_seconds"),
            "command": metrics.get("command"),
        }
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
