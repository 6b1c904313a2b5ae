"""Time token-by-token generation with and without the key/value cache: ms per new token after a
context of 16, 64 and 256 tokens.

Run: python bench/bench_lm_decoding.py [--model assets/models/review-lm] [--repeats 20] [--threads 1]

Eight new tokens after a context of c tokens, one at a time: with the cache, each new token's query
against the cached keys and values of every layer (``transformer.lm.cache.forward_cached`` on the core's
``LayerCache``, the context's cache filled beforehand, untimed); without, a full pass over the whole
sequence for each (``DecoderLM.forward``), as ``generate(..., use_cache=False)`` does. Both include
the output layer (8,000-way logits). Contexts longer than the bundled model's own (128 tokens) run on
a copy of it that takes them: with rotary positions the same weights, with learned positions a longer table
(its first rows the trained ones, the rest random: the arithmetic per token is the same, the text would not be).
Prints medians; docs/models.md and docs/benchmarks.md report them.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from transformer.bundle import load_bundle
from transformer.core.decoder import DecoderLM, init_weights
from transformer.lm.cache import forward_cached

CONTEXTS = (16, 64, 256)


def model_for(base: DecoderLM, context: int, new: int) -> DecoderLM:
    """``base``, or a copy that takes ``context + new`` tokens (a learned position table grown to them)."""
    need = context + new
    if need <= base.config.max_len:
        return base
    longer = DecoderLM(base.config.replace(max_len=need))
    init_weights(longer)
    state = base.state_dict()
    if "embedding.positions.table.weight" in state:  # learned positions; rotary ones need no table
        table = longer.embedding.positions.table.weight.detach().clone()
        table[: base.config.max_len] = state["embedding.positions.table.weight"]
        state["embedding.positions.table.weight"] = table
    longer.load_state_dict(state)
    return longer.eval()


def median_ms(fn, repeats: int, setup=lambda: None) -> float:
    """Median milliseconds of ``fn(setup())`` over ``repeats`` runs (after one warm-up); setup is not timed."""
    fn(setup())
    times = []
    for _ in range(repeats):
        state = setup()
        begin = time.perf_counter()
        fn(state)
        times.append(time.perf_counter() - begin)
    return 1000 * statistics.median(times)


STEPS = 8  # tokens generated after the context in each timed run


@torch.no_grad()
def step_costs(model: DecoderLM, prompt: torch.Tensor, repeats: int) -> tuple[float, float]:
    """(ms per new token with the cache, ms per new token re-running the prefix): the mean over
    STEPS tokens fed one at a time after the context ``prompt`` (its cache filled beforehand, untimed)."""
    new = prompt[:, :STEPS]  # any ids: the arithmetic does not depend on which

    def cached(cache) -> None:
        for i in range(STEPS):
            forward_cached(model, new[:, i : i + 1], cache)

    def uncached(_) -> None:
        for i in range(STEPS):
            model(torch.cat([prompt, new[:, : i + 1]], dim=1))

    with_cache = median_ms(cached, repeats, setup=lambda: forward_cached(model, prompt).cache)
    without = median_ms(uncached, repeats)
    return with_cache / STEPS, without / STEPS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="assets/models/review-lm")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_bundle(args.model)
    cfg = loaded.config
    print(f"{args.model}: {cfg.num_layers} layers, d_model {cfg.d_model}, {cfg.num_heads} heads, vocab "
          f"{cfg.vocab_size}; cpu, {torch.get_num_threads()} thread(s); {STEPS} tokens after the context, median of {args.repeats}")  # fmt: skip
    gen = torch.Generator().manual_seed(0)
    for context in CONTEXTS:
        model = model_for(loaded.model, context, STEPS)
        prompt = torch.randint(3, cfg.vocab_size, (1, context), generator=gen)
        prompt[0, 0] = cfg.bos_id
        with_cache, without = step_costs(model, prompt, args.repeats)
        print(f"context {context:4d}: with cache {with_cache:6.2f} ms/token, without {without:6.2f} ms/token "
              f"({without / with_cache:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
