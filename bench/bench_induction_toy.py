"""Does the language model's architecture form an induction head at all? The bundled recipe (lm_config: pre-norm
GELU layers, learned positions, tied output), shrunk to d_model 64, 4 heads, 2 layers, trained only on rows of
``<start> span span rest`` of uniform random ids from a small vocabulary, scored every 100 steps with the same
probe as training (transformer.lm.induction).

    python bench/bench_induction_toy.py --vocab 64 --lr 3e-3 --steps 3000 --out bench/results/induction_toy.json
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import shared  # noqa: F401  (puts the repository on sys.path)
import torch
import torch.nn.functional as F
from shared import write_report

from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.lm.induction import head_induction_scores

BATCH = 32


def batch(rng: np.random.Generator, vocab: int, context: int = 32) -> torch.Tensor:
    """(BATCH, context + 1) rows: the start id 2, a span of 5..context/2 random ids, the span again, random ids."""
    rows = []
    for _ in range(BATCH):
        k = int(rng.integers(5, context // 2))
        span = rng.integers(3, vocab, size=k)
        rows.append(np.concatenate([[2], span, span, rng.integers(3, vocab, size=context - 2 * k)]))
    return torch.from_numpy(np.stack(rows))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--context", type=int, default=32, help="row length (the bundled model's is 128)")
    p.add_argument("--positional", choices=("learned", "sinusoidal"), default="learned")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument(
        "--grow-to",
        type=int,
        default=None,
        help="a curriculum: the model takes this many positions; rows are --context long until --grow-at, then this long",
    )
    p.add_argument("--grow-at", type=int, default=0, help="the step at which rows grow to --grow-to")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    config = lm_config(
        args.vocab,
        max_len=args.grow_to or args.context,
        bos_id=2,
        eos_id=2,
        d_model=args.d_model,
        num_heads=4,
        d_ff=4 * args.d_model,
        positional=args.positional,
    )
    model = DecoderLM(config)
    init_weights(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    curve, start = [], time.time()
    for step in range(args.steps + 1):
        grown = args.grow_to is not None and step >= args.grow_at
        rows = batch(rng, args.vocab, args.grow_to if grown else args.context)
        logits = model(rows[:, :-1]).logits
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), rows[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            scores = head_induction_scores(
                model, period=min(40, 12 * args.context // 32), first_id=3, end_id=args.vocab
            )
            point = {"step": step, "loss": round(loss.item(), 3), "max_induction": round(float(scores.max()), 3)}
            if args.grow_to:  # the same probe at the grown length (40 ids written twice)
                long = head_induction_scores(
                    model, period=min(40, 12 * args.grow_to // 32), first_id=3, end_id=args.vocab
                )
                point["max_induction_grown"] = round(float(long.max()), 3)
            curve.append(point)
            print(point, flush=True)
    report = {
        "recipe": f"lm_config at d_model {args.d_model}, 4 heads, 2 layers, d_ff {4 * args.d_model}, {args.positional} positions; "
        "AdamW betas (0.9, 0.95), weight decay 0.1",
        "vocab": args.vocab,
        "lr": args.lr,
        "context": args.context,
        "grow_to": args.grow_to,
        "grow_at": args.grow_at if args.grow_to else None,
        "batch": BATCH,
        "seconds": round(time.time() - start, 1),
        "curve": curve,
    }
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
