"""Which copy circuit a small decoder builds: where its second-layer heads look in a repeated span.

Run: python bench/bench_induction_offsets.py [--steps 2000] [--seeds 0 1] [--out results.json]

Two layers (d_model 64, 4 query heads over 2 key/value heads, RMSNorm, SwiGLU width 172: the layers of the
language model of issue 38 shrunk), trained from scratch on rows of ``<start> span span rest`` of uniform
random ids out of 64 (spans of 5..31, rows of 64; ``bench_induction_toy.batch``), AdamW lr 3e-3, batch 32,
one CPU thread. Variants: rotary positions with the output layer tied to the embedding and untied, and
learned positions untied (the Train page's induction preset's choice); and rotary, tied, with a first layer
that is local with a window of 2 keys (each query sees itself and the token before it: a sliding window, as
Mistral's layers and Gemma's local layers have, at its smallest), so the one look back it can learn is one token.

Reported per run, on 16 rows of 20 random ids written twice (``transformer.lm.induction``):

* ``loss_second_copy``: nats per token on the second copy (ln 64 = 4.16 is a guess; near 0 = it copies);
* ``induction``: the best head's induction score (attention from each token of the second copy to the token
  right after its earlier occurrence: offset +1, the textbook circuit and the atlas's score);
* ``copy_offset``: for the last layer's head that attends most to the earlier copy, the offset k (−1..10)
  after the earlier occurrence that it attends to most, and that weight. The textbook circuit is k = +1
  (its first-layer partner looks one token back); k = +3 means a first-layer head looking 3 back supplies
  the key and one looking 2 back carries the next token;
* ``first_layer_look_back``: the distance each first-layer head attends to most, and that weight.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import shared  # noqa: F401  (puts the repository on sys.path)
import torch
import torch.nn.functional as F
from bench_induction_toy import batch
from shared import save_report

from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.lm.induction import repeated_random_tokens

VOCAB, CONTEXT, PERIOD = 64, 64, 20
OFFSETS = range(-1, 11)
VARIANTS = {
    "rotary, tied output": dict(positional="rotary", tie_output_embedding=True),
    "rotary, untied output": dict(positional="rotary", tie_output_embedding=False),
    "learned positions, untied output": dict(positional="learned", tie_output_embedding=False),
    "rotary, tied output, first layer local (window 2)": dict(
        positional="rotary", tie_output_embedding=True, local_window=2, local_layers=(0,)
    ),
}


def build(seed: int, **layers) -> DecoderLM:
    torch.manual_seed(seed)
    config = lm_config(VOCAB, d_model=64, num_heads=4, num_layers=2, d_ff=172, max_len=CONTEXT + 1,
                       norm_style="rms", gated_ffn=True, activation="silu", num_kv_heads=2, bos_id=2, eos_id=2,
                       **layers)  # fmt: skip
    model = DecoderLM(config)
    init_weights(model)
    return model


def train(model: DecoderLM, steps: int, seed: int) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(seed)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        x = batch(rng, VOCAB, CONTEXT)
        loss = F.cross_entropy(model(x[:, :-1]).logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


@torch.no_grad()
def circuit(model: DecoderLM) -> dict:
    model.eval()
    ids = repeated_random_tokens(16, PERIOD, VOCAB, 3, 2, seed=0)
    out = model(ids, need_weights=True)
    nll = -F.log_softmax(out.logits, -1)[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
    weights = [a.weights.numpy() for a in out.attention]  # each (B, H, T, T)
    j = np.arange(1, PERIOD - 1)
    queries = 1 + PERIOD + j

    def at_offset(w: np.ndarray, k: int) -> np.ndarray:  # (H,) mean attention to the occurrence + k
        keys = 1 + j + k
        ok = (keys >= 0) & (keys <= queries)
        return w[:, :, queries[ok], keys[ok]].mean(axis=(0, 2))

    last = weights[-1]
    profile = np.stack([at_offset(last, k) for k in OFFSETS])  # (K, H)
    head = int(profile.sum(0).argmax())
    best_k = int(np.argmax(profile[:, head]))
    first = weights[0]
    t = np.arange(12, first.shape[-1])
    back = np.stack([first[:, :, t, t - d].mean(axis=(0, 2)) for d in range(0, 11)])  # (D, H)
    scores = [at_offset(w, 1) for w in weights]
    return {
        "loss_second_copy": round(float(nll[:, PERIOD + 1 : 2 * PERIOD].mean()), 3),
        "induction": round(float(max(s.max() for s in scores)), 3),
        "copy_offset": {"head": head + 1, "k": list(OFFSETS)[best_k], "weight": round(float(profile[best_k, head]), 3)},
        "first_layer_look_back": [
            {"head": h + 1, "distance": int(back[:, h].argmax()), "weight": round(float(back[:, h].max()), 3)}
            for h in range(back.shape[1])
        ],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    report = {"steps": args.steps, "machine": f"{platform.machine()}; torch {torch.__version__}; 1 thread", "runs": []}
    if args.out and Path(args.out).exists():  # keep the other variants' runs of an earlier report
        earlier = json.loads(Path(args.out).read_text(encoding="utf-8"))
        report["runs"] = [r for r in earlier.get("runs", []) if r["variant"] not in args.variants]
    for name in args.variants:
        layers = VARIANTS[name]
        for seed in args.seeds:
            start = time.process_time()
            model = build(seed, **layers)
            train_loss = train(model, args.steps, seed)
            row = {"variant": name, "seed": seed, "train_loss": round(train_loss, 3), **circuit(model),
                   "cpu_seconds": round(time.process_time() - start, 1)}  # fmt: skip
            report["runs"].append(row)
            print(row, flush=True)
            save_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
