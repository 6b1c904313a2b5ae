"""Time token-by-token generation with and without the key/value cache: ms per new token after a
context of 16, 64 and 256 tokens.

Run: python bench/bench_lm_decoding.py [--model assets/models/review-lm] [--repeats 50] [--threads 1]

One step at a context of c tokens: with the cache, the new token's query against the cached keys and
values of every layer (``transformer.lm.cache.forward_cached``, the c tokens' cache filled once
beforehand); without, a full pass over all c + 1 tokens (``DecoderLM.forward``), as
``generate(..., use_cache=False)`` does each step. Both include the output layer (8,000-way logits). Contexts longer than the
bundled model's own (128 tokens) run on a copy of it with a longer learned position table (its first
rows the trained ones, the rest random: the arithmetic per token is the same, the text would not be).
Prints medians; README reports them.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from transformer.bundle import load_bundle
from transformer.lm.cache import forward_cached
from transformer.lm.model import DecoderLM, init_weights

CONTEXTS = (16, 64, 256)


def model_for(base: DecoderLM, context: int, new: int) -> DecoderLM:
    """``base``, or a copy whose position table reaches ``context + new`` tokens."""
    need = context + new
    if need <= base.config.max_len:
        return base
    longer = DecoderLM(base.config.replace(max_len=need))
    init_weights(longer)
    state = base.state_dict()
    table = longer.embedding.positions.table.weight.detach().clone()
    table[: base.config.max_len] = state["embedding.positions.table.weight"]
    state["embedding.positions.table.weight"] = table
    longer.load_state_dict(state)
    return longer.eval()


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        fn()
        times.append(time.perf_counter() - begin)
    return 1000 * statistics.median(times)


@torch.no_grad()
def step_costs(model: DecoderLM, prompt: torch.Tensor, repeats: int) -> tuple[float, float]:
    """(ms for one new token with the cache of ``prompt`` filled, ms for one full pass over prompt + 1)."""
    cache = forward_cached(model, prompt[:, :-1]).cache  # the context's keys and values, filled once
    last = prompt[:, -1:]
    with_cache = median_ms(lambda: forward_cached(model, last, cache), repeats)
    without = median_ms(lambda: model(prompt), repeats)
    return with_cache, without


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="assets/models/review-lm")
    p.add_argument("--repeats", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_bundle(args.model)
    cfg = loaded.config
    print(f"{args.model}: {cfg.num_layers} layers, d_model {cfg.d_model}, {cfg.num_heads} heads, vocab "
          f"{cfg.vocab_size}; cpu, {torch.get_num_threads()} thread(s); median of {args.repeats} steps")  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    for context in CONTEXTS:
        model = model_for(loaded.model, context, 1)
        prompt = torch.randint(3, cfg.vocab_size, (1, context + 1), generator=gen)
        prompt[0, 0] = cfg.bos_id
        with_cache, without = step_costs(model, prompt, args.repeats)
        print(f"context {context:4d}: with cache {with_cache:6.2f} ms/token, without {without:6.2f} ms/token "
              f"({without / with_cache:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
