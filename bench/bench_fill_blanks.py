"""How well the masked language models trained here fill the fixed blanks written before they were trained.

Run: python bench/bench_fill_blanks.py [--models assets/models/imdb-sst2-mlm assets/models/nsmc-mlm] [--out f.json]

The blanks: ``bench/data/fill_blanks.json`` (20 English, 20 Korean; committed before training). A blank counts
as filled when the expected word's first piece (the whole word when the tokenizer keeps it whole) is the top
guess (top-1) or among the five best (top-5); ``transformer.text.masked_lm.score_blanks``, the same function
that wrote the figures into each model's metrics.json. One CPU thread.
"""

from __future__ import annotations

import argparse

import torch
from shared import ROOT, save_report

from transformer.bundle import load_bundle
from transformer.text.masked_lm import score_blanks

MODELS = {"imdb-sst2-mlm": "en", "nsmc-mlm": "ko"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=[str(ROOT / "assets" / "models" / name) for name in MODELS])
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "fill_blanks.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {"what": __doc__.split("\n\n")[0], "models": {}}
    for folder in args.models:
        name = folder.rstrip("/").split("/")[-1]
        scores = score_blanks(load_bundle(folder), MODELS.get(name, "en"))
        report["models"][name] = scores
        print(f"{name}: top-1 {scores['top1']}/{scores['items']}, top-5 {scores['top5']}/{scores['items']}")
        for row in scores["rows"]:
            print(f"  {row['text']}  -> expected {row['expected']!r}; guesses {', '.join(row['top5'])}")
    save_report(report, args.out)


if __name__ == "__main__":
    main()
