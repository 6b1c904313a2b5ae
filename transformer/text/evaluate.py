"""Score a classifier on an IMDB split: ``python -m transformer.text.evaluate --help``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from ..analysis.analyze import pad_ids
from ..bundle import load_bundle
from ..core.devices import resolve_device
from ..datasets.imdb import default_imdb_path, load_imdb
from .corpora import default_nsmc_dir, load_nsmc


@torch.no_grad()
def predict_ids(model, seqs: list[list[int]], device: torch.device, batch_size: int = 64) -> list[int]:
    """Predicted class per id list, batched by length so little padding is computed."""
    model.eval()
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    preds = [0] * len(seqs)
    pad = model.config.pad_id
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        ids = pad_ids([seqs[i] for i in chunk], pad)
        probs = model.probabilities(model(ids.to(device)).logits)
        for i, p in zip(chunk, probs.argmax(-1).tolist()):
            preds[i] = p
    return preds


def evaluate_ids(model, seqs: list[list[int]], labels: list[int], device: torch.device) -> dict:
    """Accuracy overall and per class (keyed by label name)."""
    preds = predict_ids(model, seqs, device)
    names = model.config.label_names
    per_class = {}
    for c, name in enumerate(names):
        idx = [i for i, y in enumerate(labels) if y == c]
        per_class[name] = sum(preds[i] == c for i in idx) / max(1, len(idx))
    correct = sum(p == y for p, y in zip(preds, labels))
    return {"accuracy": correct / max(1, len(labels)), "per_class": per_class, "count": len(labels)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m transformer.text.evaluate",
        description="Accuracy of a bundled classifier on an IMDB or NSMC-style split.",
    )
    p.add_argument("--model", default="assets/models/imdb-sentiment", help="bundled-model folder")
    p.add_argument("--dataset", default="imdb", choices=["imdb", "nsmc"])
    p.add_argument(
        "--data", default=None, help="aclImdb/ folder or aclImdb_v1.tar.gz; for nsmc the folder of its files"
    )
    p.add_argument("--split", default="test", choices=["train", "test"])
    p.add_argument("--max-len", type=int, default=0, help="truncation (0: the model's chosen length)")
    p.add_argument("--device", default="auto")
    args = p.parse_args(argv)
    try:
        loaded = load_bundle(args.model)
        device = resolve_device(args.device)
        if args.dataset == "nsmc":
            examples = load_nsmc(Path(args.data) if args.data else default_nsmc_dir(), args.split)
        else:
            examples = load_imdb(Path(args.data) if args.data else default_imdb_path(), args.split)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    cfg = loaded.config
    max_len = args.max_len or cfg.default_max_tokens or cfg.max_len
    encoder = loaded.text_encoder()
    seqs = [
        e.ids or [loaded.vocab.unk_id]
        for e in encoder.encode_batch([ex.text for ex in examples], max_len, cfg.add_cls_token)
    ]
    result = evaluate_ids(loaded.model.to(device), seqs, [ex.label for ex in examples], device)
    result.update({"split": args.split, "max_len": max_len, "model": args.model})
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
