"""Fine-tune a pretrained Hugging Face encoder (all-MiniLM-L6-v2) for sentiment, and save it as a
Hugging Face folder (``BertForSequenceClassification``) that our importer and ``transformers`` both open.

The recipe: the encoder's own weights; BERT's classification head (the pooler's dense + tanh on
``[CLS]``, started from the checkpoint's pooler, then a linear layer); SST-2's training sentences,
the contrast templates (:mod:`.contrast`) and a sample of IMDB's training reviews cut at
``--train-len`` tokens; AdamW with warm-up and linear decay. Validation is carved from train (SST-2
and IMDB, seed 13 as every other model here); the epoch with the best mean of the two validation
accuracies is kept; a temperature is fitted on validation; test is scored once at the end.

    python -m transformer.text.finetune_encoder --base assets/models/all-minilm-l6-v2 \\
        --out assets/models/minilm-sentiment --imdb-reviews 6000 --epochs 2 --threads 1
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
from tqdm import tqdm

from ..analysis.analyze import pad_ids
from ..core.model import SequenceClassifier
from ..datasets.imdb import default_imdb_path, load_imdb, train_val_split
from ..hf.importer import load_hf_folder
from .calibration import (
    DEFAULT_BINS,
    expected_calibration_error,
    fit_temperature,
    negative_log_likelihood,
    reliability,
    softmax,
)
from .contrast import contrast_sentences
from .corpora import default_sst2_path, load_sst2

LABELS = ("negative", "positive")
PROBES = (
    "not bad at all",
    "I expected it to be boring but it was great",
    "the movie was not good",
    "what a waste of time",
    "an absolute delight from start to finish",
    "I did not enjoy it",
)
COPIED = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "LICENSE")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="assets/models/all-minilm-l6-v2", help="the Hugging Face encoder folder")
    p.add_argument("--out", required=True, help="the folder to write (a Hugging Face folder)")
    p.add_argument("--imdb", default=None, help="aclImdb archive (default: ../shared/data/aclImdb.tar.gz)")
    p.add_argument("--sst2", default=None, help="stsa.binary.train (default: ../shared/data/sst2/stsa.binary.train)")
    p.add_argument("--imdb-reviews", type=int, default=6000, help="IMDB training reviews sampled (0: none)")
    p.add_argument("--imdb-val", type=int, default=1500, help="IMDB validation reviews scored each epoch")
    p.add_argument("--imdb-test", type=int, default=0, help="IMDB test reviews scored at the end (0: all)")
    p.add_argument("--contrast", type=int, default=4000, help="contrast-template sentences added (0: none)")
    p.add_argument("--train-len", type=int, default=128, help="tokens kept per text (the model's [CLS] included)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--warmup", type=float, default=0.1)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=13, help="the train/validation split, as every model here")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--limit", type=int, default=0, help="at most this many examples per set (quick runs, tests)")
    p.add_argument(
        "--choose-length",
        default="",
        help="instead of training: for the folder --out already holds, the IMDB validation accuracy at each of these "
        "truncation lengths (e.g. 128,256,512); the best is kept, test is scored once at it, and metrics.json says so",
    )
    return p.parse_args(argv)


def load_sets(args: argparse.Namespace) -> dict[str, list]:
    """train / val_short / val_long / test examples (validation carved from train, stratified, seed 13)."""
    rng = random.Random(args.seed)
    sst = load_sst2(Path(args.sst2) if args.sst2 else default_sst2_path())
    sst_train, sst_val = train_val_split(sst, 0.1, args.seed)
    train = list(sst_train) + contrast_sentences(args.contrast, args.seed) if args.contrast else list(sst_train)
    sets = {"val_short": sst_val, "val_long": [], "test": []}
    if args.imdb_reviews:
        where = Path(args.imdb) if args.imdb else default_imdb_path()
        imdb_train, imdb_val = train_val_split(load_imdb(where, "train"), 0.1, args.seed)
        train += rng.sample(imdb_train, min(args.imdb_reviews, len(imdb_train)))
        sets["val_long"] = rng.sample(imdb_val, min(args.imdb_val, len(imdb_val)))
        test = load_imdb(where, "test")
        sets["test"] = rng.sample(test, args.imdb_test) if 0 < args.imdb_test < len(test) else test
    if args.limit:
        train = rng.sample(train, min(args.limit, len(train)))
        sets = {k: v[: args.limit] for k, v in sets.items()}
    return {"train": train, **sets}


def classifier_from(base, folder: Path, dropout: float) -> SequenceClassifier:
    """Our SequenceClassifier on the base encoder's weights with BERT's head: pooler (from the checkpoint's
    ``pooler.dense`` where it has one) + a new linear layer (N(0, 0.02), as BERT initialises it)."""
    d = base.config.d_model
    config = base.config.replace(
        has_head=True, head_hidden=(d,), head_activation="tanh", label_names=LABELS, pooling="first", dropout=dropout
    )
    model = SequenceClassifier(config)
    missing, unexpected = model.load_state_dict(base.model.state_dict(), strict=False)
    if unexpected or not all(k.startswith("classifier.") for k in missing):
        raise ValueError(f"{folder} is not a bare BERT encoder: missing {missing[:3]}, unexpected {unexpected[:3]}.")
    pooler = read_pooler(folder)
    with torch.no_grad():
        if pooler is not None:
            model.classifier[0].weight.copy_(pooler[0])
            model.classifier[0].bias.copy_(pooler[1])
        model.classifier[2].weight.normal_(0.0, 0.02)
        model.classifier[2].bias.zero_()
    return model


def read_pooler(folder: Path) -> tuple[torch.Tensor, torch.Tensor] | None:
    path = folder / "model.safetensors"
    if not path.is_file():
        return None
    with safe_open(str(path), "pt") as f:
        names = set(f.keys())
        for prefix in ("", "bert."):
            if f"{prefix}pooler.dense.weight" in names:
                return f.get_tensor(f"{prefix}pooler.dense.weight"), f.get_tensor(f"{prefix}pooler.dense.bias")
    return None


def encode(encoder, examples, max_len: int) -> list[list[int]]:
    return [e.ids for e in encoder.encode_batch([ex.text for ex in examples], max_len)]


def batches_by_length(lengths: list[int], size: int, rng: random.Random) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], rng.random()))
    out = [order[i : i + size] for i in range(0, len(order), size)]
    rng.shuffle(out)
    return out


@torch.no_grad()
def logits_of(model, seqs: list[list[int]], pad_id: int, batch_size: int = 64) -> np.ndarray:
    """(N, 2) logits, in input order; inputs sorted by length inside so little padding is run."""
    model.eval()
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = np.zeros((len(seqs), len(LABELS)), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        out[chunk] = model(pad_ids([seqs[i] for i in chunk], pad_id)).logits.float().numpy()
    return out


def accuracy(logits: np.ndarray, labels: list[int]) -> float:
    return float((logits.argmax(-1) == np.asarray(labels)).mean()) if len(labels) else float("nan")


def train_epoch(model, seqs, labels, optimizer, scheduler, pad_id: int, batches, epoch: int) -> float:
    model.train()
    total = 0.0
    bar = tqdm(batches, desc=f"epoch {epoch}", unit="batch", leave=False, mininterval=30.0)
    for batch in bar:
        ids = pad_ids([seqs[i] for i in batch], pad_id)
        loss = F.cross_entropy(model(ids).logits, torch.tensor([labels[i] for i in batch]))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        total += loss.item() * len(batch)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
    return total / sum(len(b) for b in batches)


def hf_state(model: SequenceClassifier) -> dict[str, torch.Tensor]:
    """Our weights under BertForSequenceClassification's names (the importer's mapping, inverted)."""
    s = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    out = {
        "bert.embeddings.word_embeddings.weight": s["encoder.embedding.tokens.weight"],
        "bert.embeddings.position_embeddings.weight": s["encoder.embedding.positions.table.weight"],
        "bert.embeddings.token_type_embeddings.weight": s["encoder.embedding.token_types.weight"],
    }
    pairs = [("encoder.embedding.norm", "bert.embeddings.LayerNorm")]
    for i in range(model.config.num_layers):
        ours, theirs = f"encoder.layers.{i}", f"bert.encoder.layer.{i}"
        pairs += [(f"{ours}.self_attn.w_{r}", f"{theirs}.attention.self.{n}") for r, n in zip("qkv", NAMES)]
        pairs += [
            (f"{ours}.self_attn.w_o", f"{theirs}.attention.output.dense"),
            (f"{ours}.attn_block.norm", f"{theirs}.attention.output.LayerNorm"),
            (f"{ours}.ffn.linear1", f"{theirs}.intermediate.dense"),
            (f"{ours}.ffn.linear2", f"{theirs}.output.dense"),
            (f"{ours}.ffn_block.norm", f"{theirs}.output.LayerNorm"),
        ]
    pairs += [("classifier.0", "bert.pooler.dense"), ("classifier.2", "classifier")]
    for ours, theirs in pairs:
        out[f"{theirs}.weight"], out[f"{theirs}.bias"] = s[f"{ours}.weight"], s[f"{ours}.bias"]
    return {k: v.to(torch.float16).contiguous() for k, v in out.items()}


NAMES = ("query", "key", "value")


def write_folder(out: Path, base_folder: Path, model: SequenceClassifier, metrics: dict) -> None:
    """A Hugging Face folder: config.json (the base's, as BertForSequenceClassification with our labels),
    model.safetensors (float16), the base's tokenizer files and LICENSE, metrics.json."""
    out.mkdir(parents=True, exist_ok=True)
    hf = json.loads((base_folder / "config.json").read_text(encoding="utf-8"))
    hf.update(
        architectures=["BertForSequenceClassification"],
        id2label={str(i): name for i, name in enumerate(LABELS)},
        label2id={name: i for i, name in enumerate(LABELS)},
    )
    hf.pop("_name_or_path", None)
    (out / "config.json").write_text(json.dumps(hf, indent=2) + "\n", encoding="utf-8")
    save_file(hf_state(model), str(out / "model.safetensors"), metadata={"format": "pt"})
    for name in COPIED:
        if (base_folder / name).is_file():
            shutil.copyfile(base_folder / name, out / name)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def choose_length(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Validation accuracy on the sampled IMDB validation reviews at each ``--choose-length``, the best (ties: the
    shorter) kept in metrics.json, and IMDB test (the same sample as training's measurement) scored once at it."""
    folder = Path(args.out)
    loaded = load_hf_folder(folder, "cpu")
    encoder, pad_id, model = loaded.text_encoder(), loaded.config.pad_id, loaded.model
    sets = load_sets(args)
    lengths = sorted(int(n) for n in args.choose_length.split(","))
    labels = [ex.label for ex in sets["val_long"]]
    by_length = {n: round(accuracy(logits_of(model, encode(encoder, sets["val_long"], n), pad_id), labels), 4)
                 for n in lengths}  # fmt: skip
    chosen = max(lengths, key=lambda n: (by_length[n], -n))
    t0 = time.perf_counter()
    test_labels = np.array([ex.label for ex in sets["test"]])
    test_logits = logits_of(model, encode(encoder, sets["test"], chosen), pad_id)
    test = accuracy(test_logits, list(test_labels))
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    metrics["calibration"] = calibrate_at(model, encoder, pad_id, sets, chosen, test_logits, test_labels, args.seed)
    metrics["truncation"] = {
        "imdb_validation_accuracy_by_length": {str(n): v for n, v in by_length.items()},
        "chosen": chosen,
        "imdb_test_accuracy_at_chosen": round(test, 4),
        "imdb_test_reviews": len(sets["test"]),
        "seconds": round(time.perf_counter() - t0, 1),
        "command": command_line(argv),
    }
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(metrics["truncation"], indent=1), file=sys.stderr)
    return 0


def calibrate_at(model, encoder, pad_id: int, sets, length: int, test_logits, test_labels, seed: int) -> dict:
    """The temperature fitted on validation (IMDB reviews + SST-2 sentences) at the chosen ``length``, measured
    on the test sample: NLL, ECE and the reliability diagram before and after (the Classifier page's schema)."""
    val = sets["val_long"] + sets["val_short"]
    val_logits = logits_of(model, encode(encoder, val, length), pad_id)
    val_labels = np.array([ex.label for ex in val])
    temperature = fit_temperature(val_logits, val_labels)
    before, after = (
        reliability(softmax(test_logits), test_labels),
        reliability(softmax(test_logits, temperature), test_labels),
    )
    return {
        "temperature": round(temperature, 4),
        "fitted_on": f"validation: {len(sets['val_long']):,} IMDB reviews + {len(sets['val_short']):,} SST-2 sentences "
        f"carved from train, seed {seed}",
        "measured_on": f"test ({len(test_labels):,} reviews)",
        "length": length,
        "validation_nll_before": round(negative_log_likelihood(val_logits, val_labels), 4),
        "validation_nll_after": round(negative_log_likelihood(val_logits, val_labels, temperature), 4),
        "bins": DEFAULT_BINS,
        "test_nll_before": round(negative_log_likelihood(test_logits, test_labels), 4),
        "test_nll_after": round(negative_log_likelihood(test_logits, test_labels, temperature), 4),
        "test_ece_before": round(before.ece, 4),
        "test_ece_after": round(after.ece, 4),
        "test_accuracy": round(float((test_logits.argmax(-1) == test_labels).mean()), 4),
        "reliability_before": before.to_dict(),
        "reliability_after": after.to_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.choose_length:
        return choose_length(args, argv)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    started = time.perf_counter()
    base_folder = Path(args.base)
    base = load_hf_folder(base_folder, "cpu")
    encoder, pad_id = base.text_encoder(), base.config.pad_id
    model = classifier_from(base, base_folder, args.dropout)
    sets = load_sets(args)
    seqs = {name: encode(encoder, examples, args.train_len) for name, examples in sets.items()}
    labels = {name: [ex.label for ex in examples] for name, examples in sets.items()}
    print({k: len(v) for k, v in sets.items()}, file=sys.stderr)

    steps = math.ceil(len(seqs["train"]) / args.batch_size) * args.epochs
    warmup = max(1, int(args.warmup * steps))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup))
    )
    history, best, best_state = [], -1.0, None
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        batches = batches_by_length([len(s) for s in seqs["train"]], args.batch_size, rng)
        loss = train_epoch(model, seqs["train"], labels["train"], optimizer, scheduler, pad_id, batches, epoch)
        scores = {k: accuracy(logits_of(model, seqs[k], pad_id), labels[k]) for k in ("val_short", "val_long")}
        mean = float(np.nanmean(list(scores.values())))
        history.append({"epoch": epoch, "train_loss": round(loss, 4), **{k: round(v, 4) for k, v in scores.items()},
                        "seconds": round(time.perf_counter() - t0, 1)})  # fmt: skip
        print(history[-1], file=sys.stderr)
        if mean > best:
            best, best_state = mean, {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    train_seconds = time.perf_counter() - started
    # everything below is measured on the weights as shipped (float16, read back as float32)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    metrics = measure(model, args, sets, seqs, labels, pad_id, encoder)
    metrics.update(history=history, training_seconds=round(train_seconds, 1), command=command_line(argv))
    write_folder(Path(args.out), base_folder, model, metrics)
    print(json.dumps({k: metrics[k] for k in ("metrics", "probes")}, indent=1), file=sys.stderr)
    return 0


def measure(model, args, sets, seqs, labels, pad_id: int, encoder) -> dict:
    """Validation, the fitted temperature, test (once), the probes."""
    val_names = [k for k in ("val_short", "val_long") if labels[k]]
    val_logits = np.concatenate([logits_of(model, seqs[k], pad_id) for k in val_names])
    val_labels = np.concatenate([labels[k] for k in val_names])
    temperature = fit_temperature(val_logits, val_labels)
    results = {k: round(accuracy(logits_of(model, seqs[k], pad_id), labels[k]), 4) for k in val_names}
    calibration = {
        "temperature": round(temperature, 4),
        "fitted_on": f"validation: {len(sets['val_short']):,} SST-2 sentences + {len(sets['val_long']):,} IMDB "
        f"reviews carved from train, seed {args.seed}",
        "validation_nll_before": round(negative_log_likelihood(val_logits, val_labels), 4),
        "validation_nll_after": round(negative_log_likelihood(val_logits, val_labels, temperature), 4),
    }
    if labels["test"]:
        t0 = time.perf_counter()
        test_logits = logits_of(model, seqs["test"], pad_id)
        results["imdb_test_accuracy"] = round(accuracy(test_logits, labels["test"]), 4)
        results["imdb_test_reviews"] = len(labels["test"])
        results["imdb_test_seconds"] = round(time.perf_counter() - t0, 1)
        calibration["test_ece_before"] = round(expected_calibration_error(softmax(test_logits), labels["test"]), 4)
        calibration["test_ece_after"] = round(
            expected_calibration_error(softmax(test_logits, temperature), labels["test"]), 4
        )
    probe_logits = logits_of(model, [e.ids for e in encoder.encode_batch(list(PROBES), args.train_len)], pad_id)
    probes = {t: round(float(p[1]), 4) for t, p in zip(PROBES, softmax(probe_logits, temperature))}
    return {
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), assets/models/all-minilm-l6-v2",
        "data": {
            "train": len(sets["train"]),
            "sst2_validation": len(sets["val_short"]),
            "imdb_validation": len(sets["val_long"]),
            "imdb_reviews_in_training": args.imdb_reviews,
            "contrast_sentences": args.contrast,
            "train_len": args.train_len,
        },
        "metrics": results,
        "calibration": calibration,
        "probes": {"positive_probability": probes},
        "device": f"cpu ({torch.get_num_threads()} threads)",
        "torch": torch.__version__,
    }


def command_line(argv: list[str] | None) -> str:
    return "python -m transformer.text.finetune_encoder " + shlex.join(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
