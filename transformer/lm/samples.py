"""Continuations for docs/models.md, chosen by a fixed seed (not picked by hand):
``python -m transformer.lm.samples [--model assets/models/review-lm] [--steps 40] [--seed 0]``.

Each prompt is continued greedily and by seeded sampling (temperature 0.8, top-p 0.95); prints Markdown.
"""

from __future__ import annotations

import argparse

import torch

from ..bundle import load_bundle
from ..core.bpe_text import decode, encode_prompt
from .decode import generate
from .sampling import Sampling

PROMPTS = (
    "This movie was",
    "The acting in this film",
    "I don't understand why",
    "이 영화는",
    "배우들의 연기가",
    "정말 재미없는",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="assets/models/review-lm")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    loaded = load_bundle(args.model)
    tok, model = loaded.lm_tokenizer, loaded.model
    settings = {
        "greedy": Sampling(),
        f"sampled (seed {args.seed}, temperature 0.8, top-p 0.95)": Sampling(False, 0.8, 0, 0.95, args.seed),
    }
    print("| prompt | decoding | continuation |\n|---|---|---|")
    for prompt in PROMPTS:
        ids = encode_prompt(tok, prompt).ids
        for name, sampling in settings.items():
            out = generate(model, ids, args.steps, sampling, stop_at=loaded.config.eos_id)
            text = decode(tok, out.ids[len(ids) :]).replace("|", "\\|").replace("\n", " ")
            print(f"| {prompt} | {name} | {text} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
