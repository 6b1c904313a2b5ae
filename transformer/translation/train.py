"""Train a translation model on a generated task: ``python -m transformer.translation.train --help``.

Each step draws a fresh batch from the seeded generator (training split only); at the end the
model is scored on held-out pairs (exact match of greedy decoding, and per-layer per-head
alignment accuracy of cross-attention) and saved as a bundled model with metrics.json.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..bundle import save_bundle
from ..core.config import ModelConfig
from ..core.model import EncoderDecoder
from .evaluate import evaluate, held_out_groups, scores_by_group
from .tasks import get_task
from .vocab import alignment_tensor, batch_tensors, build_vocabs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.translation.train", description=__doc__.splitlines()[0])
    p.add_argument("--task", default="word-order", choices=["word-order", "dates"])
    p.add_argument("--out", required=True, help="output bundled-model folder")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2, help="encoder and decoder layers each")
    p.add_argument("--d-ff", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--minutes", type=float, default=9.0, help="stop training after this many minutes")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--align-weight", type=float, default=0.0, help="weight of a guided-alignment loss (0: off)")
    p.add_argument("--test-size", type=int, default=2000)
    p.add_argument(
        "--group-size",
        type=int,
        default=300,
        help="held-out pairs per input format (dates) or drawn for the sentence shapes (word order)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    return p.parse_args(argv)


def make_config(args, source_size: int, target_size: int) -> ModelConfig:
    return ModelConfig(
        kind="encoder-decoder", vocab_size=source_size, target_vocab_size=target_size, d_model=args.d_model,
        num_heads=args.heads, num_layers=args.layers, num_decoder_layers=args.layers, d_ff=args.d_ff,
        max_len=64, dropout=args.dropout, scale_embedding=True, pad_id=1, target_pad_id=1, bos_id=2, eos_id=3,
        label_names=("translation", "none"), target_tokenizer="characters" if args.task == "dates" else "basic_english",
        tokenizer="digits" if args.task == "dates" else "basic_english",
    )  # fmt: skip


def step_loss(model: EncoderDecoder, pairs, vocabs, align_weight: float) -> torch.Tensor:
    """Cross-entropy of the next target token (+ guided alignment on layer L-1, head 0 when asked)."""
    src, tgt = batch_tensors(pairs, *vocabs)
    out = model(src, tgt[:, :-1], need_weights=align_weight > 0)
    loss = F.cross_entropy(out.logits.transpose(1, 2), tgt[:, 1:], ignore_index=model.config.target_pad_id)
    if align_weight > 0:
        gold = alignment_tensor(pairs, tgt.shape[1] - 1)  # (B, T_t)
        weights = out.cross[-1].weights[:, 0]  # (B, T_t, T_s)
        picked = weights.gather(-1, gold.clamp(min=0)[..., None])[..., 0]
        loss = loss - align_weight * torch.log(picked + 1e-9)[gold >= 0].mean()
    return loss


def lr_factor(step: int, total: int, warmup: int) -> float:
    return min((step + 1) / warmup, max(0.05, (total - step) / max(1, total - warmup)))


def train(args) -> tuple[EncoderDecoder, dict]:
    task = get_task(args.task)
    vocabs = build_vocabs(task)
    torch.manual_seed(args.seed)
    model = EncoderDecoder(make_config(args, len(vocabs[0]), len(vocabs[1])))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, args.steps, args.warmup))
    rng, start, done = random.Random(args.seed), time.perf_counter(), 0
    bar = tqdm(range(args.steps), desc=args.task, unit="step", mininterval=5.0)
    model.train()
    for step in bar:
        pairs = [task.sample(rng, "train") for _ in range(args.batch_size)]
        loss = step_loss(model, pairs, vocabs, args.align_weight)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        done = step + 1
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.4f}")
        if time.perf_counter() - start > 60 * args.minutes:
            break
    bar.close()
    return model.eval(), {"steps": done, "train_seconds": round(time.perf_counter() - start, 1), "loss": loss.item()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    model, run = train(args)
    task = get_task(args.task)
    vocabs = build_vocabs(task)
    scores = evaluate(model, task, vocabs, args.test_size, seed=10_000 + args.seed)
    per_group = args.group_size if args.task == "dates" else 10 * args.group_size
    scores["exact_match_by_format"] = scores_by_group(
        model, vocabs, held_out_groups(args.task, per_group, 20_000 + args.seed)
    )
    metrics = {
        "task": args.task,
        "data": task.description,
        "held_out": "test pairs use only combinations absent from training"
        + (" (subject-verb pairs)" if args.task == "word-order" else " ((year, month) pairs)"),
        **scores,
        "training": {**run, "batch_size": args.batch_size, "device": "cpu", "threads": args.threads},
        "command": "python -m transformer.translation.train " + shlex.join(argv if argv is not None else sys.argv[1:]),
    }
    save_bundle(Path(args.out), model, model.config, vocabs[0], metrics, target_vocab=vocabs[1])
    print(f"exact match {scores['exact_match']:.4f}, best head {scores['best_head']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
