"""Go on fine-tuning a sentiment classifier made by :mod:`.finetune_encoder` on everyday short forms, and write
it as the same Hugging Face folder (issue 50, item 9).

The recipe: start from the shipped weights (``--start``); train on SST-2's training sentences, the contrast
templates of :mod:`.contrast` (with "but"), contrasts without "but", scores ("8/10", "2 stars", label from the
score), lukewarm verdicts ("it was okay, i guess", "5/10") with the target 50/50, and a sample of IMDB's
training reviews cut at ``--train-len`` tokens so long reviews are not forgotten. Validation is carved from
train as in :mod:`.finetune_encoder` (seed 13, the same samples); the best of the checkpoints by the mean of the
SST-2 and IMDB validation accuracies is kept; a temperature is fitted on validation at ``--length`` tokens.
Every example equal to a held-out sentence (:mod:`.held_out`) is dropped. Test is not scored here:
``--test`` scores it once, for the folder to ship, and stores the calibration measured on it::

    python -m transformer.text.refine_encoder --start assets/models/minilm-sentiment --out /work/runs/x --threads 1
    python -m transformer.text.refine_encoder --out /work/runs/x --test 5000 --threads 1
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..analysis.analyze import pad_ids
from ..core.model import SequenceClassifier
from ..datasets.imdb import Example
from ..hf.importer import load_hf_folder
from .calibration import fit_temperature, negative_log_likelihood
from .contrast import comma_contrast_sentences, contrast_sentences, lukewarm_sentences, number_sentences
from .finetune_encoder import (
    accuracy,
    batches_by_length,
    calibrate_at,
    encode,
    load_sets,
    logits_of,
    write_folder,
)
from .held_out import drop_held_out, leaks

LUKEWARM = -1  # the label of a lukewarm sentence: its target is 50/50
SHIPPED_IMDB_SAMPLE = 5000  # minilm-sentiment's --imdb-reviews (its validation and test samples follow it)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--start", default="assets/models/minilm-sentiment", help="the fine-tuned folder to go on from")
    p.add_argument("--out", required=True, help="the folder to write (a Hugging Face folder; checkpoints beside)")
    p.add_argument("--imdb", default=None)
    p.add_argument("--sst2", default=None)
    p.add_argument("--imdb-reviews", type=int, default=1500, help="IMDB training reviews replayed")
    p.add_argument("--sst2-sentences", type=int, default=0, help="SST-2 training sentences sampled (0: all 6,228)")
    p.add_argument("--contrast", type=int, default=3000, help="contrast-template sentences (with 'but')")
    p.add_argument("--comma", type=int, default=1500, help="contrasts without 'but'")
    p.add_argument("--numbers", type=int, default=2000, help="score sentences ('8/10', '2 stars')")
    p.add_argument("--lukewarm", type=int, default=800, help="lukewarm sentences, target 50/50")
    p.add_argument("--train-len", type=int, default=128)
    p.add_argument("--length", type=int, default=512, help="tokens at which the temperature is fitted (the app's)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--evals", type=int, default=2, help="validation checkpoints per epoch")
    p.add_argument("--val-long", type=int, default=1500, help="IMDB validation reviews scored at each checkpoint")
    p.add_argument("--seed", type=int, default=13, help="the train/validation split, as every model here")
    p.add_argument("--data-seed", type=int, default=21, help="the generated sentences (not the shipped model's 13)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="at most this many examples per set (quick runs)")
    p.add_argument("--max-minutes", type=float, default=0, help="stop training after this wall time (0: never)")
    p.add_argument("--finish", action="store_true", help="measure and write out/best.pt of a stopped training")
    p.add_argument("--checkpoint", default="best.pt", help="with --finish: best.pt or last.pt (the last validated)")
    p.add_argument("--test", type=int, default=0, help="instead of training: score --out on this many test reviews")
    return p.parse_args(argv)


def training_examples(args: argparse.Namespace) -> tuple[list, dict]:
    """The training examples (lukewarm ones with label ``LUKEWARM``), the validation and test sets."""
    sets = load_sets(shipped_samples(args))  # SST-2 train + the shipped model's IMDB samples, seed 13
    train = sets.pop("train")
    rng = random.Random(args.data_seed)
    sst2 = train[:-SHIPPED_IMDB_SAMPLE]
    if 0 < args.sst2_sentences < len(sst2):
        sst2 = rng.sample(sst2, args.sst2_sentences)
    train = sst2 + train[-SHIPPED_IMDB_SAMPLE:][: args.imdb_reviews]
    s = args.data_seed
    train += contrast_sentences(args.contrast, s) + comma_contrast_sentences(args.comma, s + 1)
    train += number_sentences(args.numbers, s + 2)
    train += [Example(text, LUKEWARM) for text in lukewarm_sentences(args.lukewarm, s + 3)]
    kept = drop_held_out(train)
    counts = {"generated_dropped_as_held_out": len(train) - len(kept)}
    rng.shuffle(kept)
    if args.limit:
        kept = kept[: args.limit]
        sets = {k: v[: args.limit] for k, v in sets.items()}
    return kept, sets | {"counts": counts}


def shipped_samples(args: argparse.Namespace, test: int = 0) -> argparse.Namespace:
    """load_sets' arguments that draw the shipped model's samples: its 5,000 IMDB training reviews come first
    from the generator, so its 1,500 validation and 5,000 test reviews are drawn here as they were there."""
    fixed = {
        "contrast": 0,
        "imdb_reviews": SHIPPED_IMDB_SAMPLE,
        "imdb_val": 1500,
        "imdb_test": test or 5000,
        "limit": 0,
    }
    return argparse.Namespace(**(vars(args) | fixed))


def targets(labels: list[int]) -> torch.Tensor:
    """(B, 2) target probabilities: one-hot, or 50/50 for a lukewarm sentence."""
    t = torch.zeros(len(labels), 2)
    for i, y in enumerate(labels):
        if y == LUKEWARM:
            t[i] = 0.5
        else:
            t[i, y] = 1.0
    return t


def validate(model, seqs, labels, pad_id) -> dict:
    out = {k: round(accuracy(logits_of(model, seqs[k], pad_id), labels[k]), 4) for k in ("val_short", "val_long")}
    out["mean"] = round(float(np.mean(list(out.values()))), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.test:
        return score_test(args, argv)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    started = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    loaded = load_hf_folder(Path(args.start), "cpu")
    encoder, pad_id = loaded.text_encoder(), loaded.config.pad_id
    model = SequenceClassifier(loaded.config.replace(dropout=args.dropout))
    model.load_state_dict(loaded.model.state_dict())
    train, sets = training_examples(args)
    counts = sets.pop("counts")
    if leaks([ex.text for ex in train]):
        raise ValueError("a held-out sentence is in the training data")
    seqs = {"train": encode(encoder, train, args.train_len)}
    seqs |= {k: encode(encoder, v, args.train_len) for k, v in sets.items() if k != "test"}
    seqs["val_long"] = seqs["val_long"][: args.val_long]  # checkpoints: the first --val-long; the temperature: all
    labels = {"train": [ex.label for ex in train]} | {k: [ex.label for ex in v] for k, v in sets.items()}
    labels["val_long"] = labels["val_long"][: args.val_long]
    print({"train": len(train), **{k: len(v) for k, v in sets.items()}, **counts}, file=sys.stderr, flush=True)

    per_epoch = math.ceil(len(train) / args.batch_size)
    steps, warmup = per_epoch * args.epochs, max(1, int(args.warmup * per_epoch * args.epochs))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup))
    )
    if args.finish:  # the training stopped: its best checkpoint and its history, measured and written
        history = json.loads((out / "history.json").read_text(encoding="utf-8"))
    else:
        history = run_training(model, args, seqs, labels, pad_id, optimizer, scheduler, per_epoch, rng, started, out)
    model.load_state_dict(torch.load(out / args.checkpoint))
    train_seconds = history[-1]["seconds"]  # training and its validations (a --finish run: the stopped one's)
    with torch.no_grad():  # measured as shipped: float16 weights read back as float32
        for p in model.parameters():
            p.copy_(p.half().float())
    val = sets["val_long"] + sets["val_short"]
    val_logits = logits_of(model, encode(encoder, val, args.length), pad_id)
    val_labels = np.array([ex.label for ex in val])
    temperature = fit_temperature(val_logits, val_labels)
    long_n = len(sets["val_long"])
    chosen = max(history, key=lambda r: r["mean"]) if args.checkpoint == "best.pt" else history[-1]
    metrics = json.loads((Path(args.start) / "metrics.json").read_text(encoding="utf-8"))
    metrics = {k: metrics[k] for k in ("base_model", "what", "languages") if k in metrics}
    metrics |= {
        "started_from": f"{args.start} (metrics.json there: how it was fine-tuned)",
        "data": {
            "train": len(train),
            **{k: len(v) for k, v in sets.items() if k != "test"},
            **counts,
            "imdb_validation_at_checkpoints": len(labels["val_long"]),
            "imdb_reviews_in_training": args.imdb_reviews,
            "sst2_sentences_sampled": args.sst2_sentences or "all",
            "contrast_sentences": args.contrast,
            "contrast_without_but": args.comma,
            "score_sentences": args.numbers,
            "lukewarm_sentences_target_50_50": args.lukewarm,
            "train_len": args.train_len,
            "generated_seed": args.data_seed,
            "dataset": "SST-2 binary training sentences (Socher et al., EMNLP 2013) + a sample of IMDB Large Movie "
            "Review Dataset v1.0 train (Maas et al., ACL 2011) + template sentences (transformer.text.contrast)",
        },
        "metrics": {"val_short": chosen["val_short"], "val_long": chosen["val_long"], "chosen_step": chosen["step"]},
        "checkpoint": args.checkpoint,
        "calibration": {
            "temperature": round(temperature, 4),
            "fitted_on": f"validation: {long_n:,} IMDB reviews + {len(sets['val_short']):,} SST-2 sentences "
            f"carved from train, seed {args.seed}",
            "length": args.length,
            "validation_nll_before": round(negative_log_likelihood(val_logits, val_labels), 4),
            "validation_nll_after": round(negative_log_likelihood(val_logits, val_labels, temperature), 4),
            "validation_accuracy_imdb": round(accuracy(val_logits[:long_n], list(val_labels[:long_n])), 4),
            "validation_accuracy_sst2": round(accuracy(val_logits[long_n:], list(val_labels[long_n:])), 4),
        },
        "history": history,
        "training_seconds": round(train_seconds, 1),
        "seconds_with_calibration": round(time.perf_counter() - started, 1),
        "device": f"cpu ({torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "command": "python -m transformer.text.refine_encoder " + shlex.join(sys.argv[1:] if argv is None else argv),
    }
    write_folder(out, Path(args.start), model, metrics)
    print(json.dumps(metrics["calibration"], indent=1), file=sys.stderr)
    return 0


def run_training(
    model, args, seqs, labels, pad_id: int, optimizer, scheduler, per_epoch: int, rng, started, out
) -> list:
    """The training loop; validation --evals times an epoch (and when --max-minutes is reached, which stops it),
    the best checkpoint by mean validation accuracy in out/best.pt, the history in out/history.json."""
    history = [{"step": 0, **validate(model, seqs, labels, pad_id), "seconds": round(time.perf_counter() - started)}]
    print(history[-1], file=sys.stderr, flush=True)
    best, step = history[0]["mean"], 0
    torch.save(model.state_dict(), out / "best.pt")
    every = max(1, per_epoch // args.evals)
    for epoch in range(1, args.epochs + 1):
        batches = batches_by_length([len(s) for s in seqs["train"]], args.batch_size, rng)
        model.train()
        total = 0.0
        for n, batch in enumerate(batches, start=1):
            ids = pad_ids([seqs["train"][i] for i in batch], pad_id)
            loss = F.cross_entropy(model(ids).logits, targets([labels["train"][i] for i in batch]))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            total += loss.item()
            late = args.max_minutes and time.perf_counter() - started > 60 * args.max_minutes
            if n % every == 0 or n == len(batches) or late:
                row = {"step": step, "epoch": epoch, "train_loss": round(total / n, 4)}
                row |= validate(model, seqs, labels, pad_id) | {"seconds": round(time.perf_counter() - started)}
                history.append(row | ({"stopped": "--max-minutes"} if late else {}))
                print(row, file=sys.stderr, flush=True)
                torch.save(model.state_dict(), out / "last.pt")
                if row["mean"] > best:
                    best = row["mean"]
                    torch.save(model.state_dict(), out / "best.pt")
                (out / "history.json").write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
                if late:
                    return history
                model.train()
    return history


def score_test(args: argparse.Namespace, argv: list[str] | None) -> int:
    """The IMDB test sample (training's: 5,000 reviews, seed 13) scored once at ``--length`` tokens; the
    temperature refitted on validation there as before and measured on test (the Classifier page's schema)."""
    folder = Path(args.out)
    loaded = load_hf_folder(folder, "cpu")
    encoder, pad_id, model = loaded.text_encoder(), loaded.config.pad_id, loaded.model
    sets = load_sets(shipped_samples(args, args.test))
    t0 = time.perf_counter()
    test_labels = np.array([ex.label for ex in sets["test"]])
    test_logits = logits_of(model, encode(encoder, sets["test"], args.length), pad_id)
    test_seconds = time.perf_counter() - t0
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    calibration = calibrate_at(model, encoder, pad_id, sets, args.length, test_logits, test_labels, args.seed)
    metrics["calibration"] = metrics["calibration"] | calibration
    metrics["metrics"] |= {
        "imdb_test_accuracy": calibration["test_accuracy"],
        "imdb_test_reviews": len(test_labels),
        "imdb_test_length": args.length,
        "imdb_test_seconds": round(test_seconds, 1),
        "imdb_test_command": "python -m transformer.text.refine_encoder "
        + shlex.join(sys.argv[1:] if argv is None else argv),
    }
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in calibration.items() if not k.startswith("reliability")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
