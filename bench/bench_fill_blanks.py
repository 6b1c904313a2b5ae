"""How well the models of the Fill-in-the-blank page fill the fixed blanks written before any of them was scored.

Run: python bench/bench_fill_blanks.py [--models assets/models/imdb-sst2-mlm assets/models/nsmc-mlm]
     [--decoder assets/models/smollm2-135m-instruct] [--pools 16 24 32 48] [--out f.json]

The blanks: ``bench/data/fill_blanks.json`` (20 English, 20 Korean; committed on 2026-11-28 before the masked
language models were trained and before any decoder filled one). A masked model's blank counts as filled when
the expected word's first piece (the whole word when the tokenizer keeps it whole) is its top guess (top-1) or
among its five best (top-5): ``transformer.text.masked_lm.score_blanks``, the function that wrote the figures
into each model's metrics.json. The decoder (SmolLM2, English) fills a blank the page's way
(``transformer.analysis.decoder_fill``: candidates from its next-token distribution at the blank, each whole
sentence scored); a blank counts when the expected word, whole and in any case, is its first candidate or among
its five best. The English masked model and the decoder run blank by blank, interleaved, each timed by this
thread's CPU time (one thread; other jobs on the machine fall outside it) and by the wall clock.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial

import torch
from shared import ROOT, save_report

from transformer.analysis.decoder_fill import POOL, fill_blank_decoder
from transformer.analysis.fill_mask import fill_mask
from transformer.bundle import load_bundle
from transformer.loader import load_model
from transformer.text.masked_lm import BLANKS_FILE, score_blanks

MODELS = {"imdb-sst2-mlm": "en", "nsmc-mlm": "ko"}


def timed(fn):
    """(fn(), this thread's CPU seconds, wall seconds)."""
    cpu, wall = time.thread_time(), time.perf_counter()
    value = fn()
    return value, time.thread_time() - cpu, time.perf_counter() - wall


def side_by_side(masked, decoder, pools: list[int]) -> dict:
    """The English blanks, each run by the masked model and then by the decoder at every pool size."""
    items = json.loads(BLANKS_FILE.read_text(encoding="utf-8"))["en"]
    rows, runs = [], {pool: {"top1": 0, "top5": 0, "cpu_s": [], "wall_s": []} for pool in pools}
    masked_run = {"top5": 0, "cpu_s": [], "wall_s": []}
    for text, word in items:
        fill, cpu, wall = timed(partial(fill_mask, masked, text, top_k=5))
        pieces = masked.text_encoder().encode(word).tokens
        guesses = [g.token for g in fill.blanks[0].guesses]
        masked_run["top5"] += bool(pieces) and pieces[0] in guesses
        masked_run["cpu_s"].append(round(cpu, 3))
        masked_run["wall_s"].append(round(wall, 3))
        row = {"text": text, "expected": word, "masked_top5": guesses}
        for pool in pools:
            found, cpu, wall = timed(partial(fill_blank_decoder, decoder, text, top_k=5, pool=pool))
            words = [w.lower() for w in found.ranked_words()]
            run = runs[pool]
            run["top1"] += words[:1] == [word.lower()]
            run["top5"] += word.lower() in words
            run["cpu_s"].append(round(cpu, 3))
            run["wall_s"].append(round(wall, 3))
            row[f"decoder_pool{pool}"] = [[c.word, round(c.score, 2), c.left_rank] for c in found.candidates]
        rows.append(row)
        print(f"{word:>15}: masked {guesses}; decoder {row[f'decoder_pool{pools[0]}']}")
    summary = {f"pool {pool}": summarise(run) for pool, run in runs.items()}
    return {"items": len(items), "masked": summarise(masked_run), "decoder": summary, "rows": rows}


def summarise(run: dict) -> dict:
    out = {key: value for key, value in run.items() if not key.endswith("_s")}
    for key in ("cpu_s", "wall_s"):
        values = sorted(run[key])
        out[key] = {"mean": round(sum(values) / len(values), 3), "max": values[-1], "per_blank": run[key]}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=[str(ROOT / "assets" / "models" / name) for name in MODELS])
    p.add_argument("--decoder", default=str(ROOT / "assets" / "models" / "smollm2-135m-instruct"))
    p.add_argument("--pools", nargs="*", type=int, default=[POOL])
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "fill_blanks.json"))
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {"what": __doc__.split("\n\n")[0], "threads": 1, "models": {}}
    masked = {}
    for folder in args.models:
        name = folder.rstrip("/").split("/")[-1]
        masked[name] = load_bundle(folder)
        scores = score_blanks(masked[name], MODELS.get(name, "en"))
        report["models"][name] = scores
        print(f"{name}: top-1 {scores['top1']}/{scores['items']}, top-5 {scores['top5']}/{scores['items']}")
    english = next((m for name, m in masked.items() if MODELS.get(name, "en") == "en"), None)
    if args.decoder and english is not None:
        decoder = load_model(args.decoder)
        report["english_side_by_side"] = side_by_side(english, decoder, args.pools)
        for pool, run in report["english_side_by_side"]["decoder"].items():
            print(f"decoder {pool}: top-1 {run['top1']}/20, top-5 {run['top5']}/20, CPU s per blank mean "
                  f"{run['cpu_s']['mean']} max {run['cpu_s']['max']}")  # fmt: skip
    save_report(report, args.out)


if __name__ == "__main__":
    main()
