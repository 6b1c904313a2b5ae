"""Why a previous-token head is slow to form with rotary positions and a tied output layer: copying the token
d places back.

Run: python bench/bench_rotary_offsets.py [--steps 300] [--seeds 0 1] [--out results.json]

One attention layer (d_model 64, 2 heads, no feed-forward block), rows of 32 uniform random tokens out
of 64, trained for ``--steps`` steps (AdamW, lr 3e-3, batch 32) to output at position t the token at
t - d: the only way is a head that looks exactly d places back. Reported: the training loss at the end
(nats; 0.00 = solved, ln 64 = 4.16 = nothing learned), for d = 1, 2, 3, with

* ours, rotary positions (rotating halves, base 10000, as Llama),
* ours, rotary positions with an output layer of its own (untied from the input embedding),
* ours, learned absolute positions (the bundled language model's),
* transformers' ``LlamaForCausalLM`` with the same sizes (eager attention; the reference rotary), tied and untied.

The tied ones read their output through the input embedding (as the bundled language model and the Train
page's first models did). With rotary positions and a tied output the one-back copy is the hard one, in the
reference implementation as in ours; untied, it is learned as fast as any other distance. So a language model
or a Train-page model with rotary positions and a tied output tends to build its induction circuit on heads
that look two or three tokens back, which the atlas's induction score (attention to the token right after
the earlier occurrence) does not count.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F
from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from transformer.core.decoder import DecoderLM, init_weights, lm_config

VOCAB, LENGTH, BATCH = 64, 32, 32


def ours(positional: str, seed: int, tied: bool = True) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = lm_config(VOCAB, d_model=64, num_heads=2, num_layers=1, d_ff=0, max_len=LENGTH,
                       positional=positional, bos_id=0, eos_id=0, tie_output_embedding=tied)  # fmt: skip
    model = DecoderLM(config)
    init_weights(model)
    return model


def reference_llama(seed: int, tied: bool = True) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=4, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=LENGTH,
                         rope_theta=10000.0, attention_bias=True, tie_word_embeddings=tied)  # fmt: skip
    config._attn_implementation = "eager"
    return LlamaForCausalLM(config)


def final_loss(model: torch.nn.Module, distance: int, steps: int) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.Generator().manual_seed(1)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        x = torch.randint(1, VOCAB, (BATCH, LENGTH), generator=data)
        logits = model(x).logits
        loss = F.cross_entropy(logits[:, distance:].reshape(-1, VOCAB), x[:, : LENGTH - distance].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return round(loss.item(), 3)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    makers = {
        "ours, rotary": lambda s: ours("rotary", s),
        "ours, rotary, untied output": lambda s: ours("rotary", s, tied=False),
        "ours, learned positions": lambda s: ours("learned", s),
        "transformers Llama (rotary)": reference_llama,
        "transformers Llama (rotary), untied output": lambda s: reference_llama(s, tied=False),
    }
    results = {}
    for name, make in makers.items():
        results[name] = {f"d={d}": [final_loss(make(seed), d, args.steps) for seed in args.seeds] for d in (1, 2, 3)}
        print(name, results[name], flush=True)
    if args.out:
        report = {"steps": args.steps, "seeds": args.seeds, "final_training_loss_nats": results}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
