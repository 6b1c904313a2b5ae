"""Time the Classifier page's per-sentence work on one 128-token sentence: ``attribute`` (rollout,
gradient × input, integrated gradients with 50 steps as one batch), the head ranking, and batch
prediction of 256 sentences.

Run: python bench/bench_attribution.py [--model assets/models/imdb-sentiment] [--device cpu] [--repeats 7]
Prints median wall times (target for ``attribute``: under 1 s on CPU); docs/benchmarks.md reports the numbers.
"""

from __future__ import annotations

import statistics
import time

import torch
from shared import filler_text, filler_words, load, model_parser

from transformer.analysis.ablation import head_effects
from transformer.text.attribution import attribute, sentence_ids
from transformer.text.predict import predict_batch


def median_ms(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times), 1000 * min(times)


def main() -> None:
    p = model_parser(__doc__)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--length", type=int, default=128)
    args = p.parse_args()
    loaded = load(args)
    words = filler_words(loaded)
    text = filler_text(loaded, args.length)
    print(f"model {args.model} on {args.device}, {torch.get_num_threads()} thread(s), {args.length} tokens")
    for rule in ("gauss-legendre", "trapezoid"):
        result = attribute(loaded, text, steps=args.steps, rule=rule, max_len=args.length)
        med, best = median_ms(
            lambda r=rule: attribute(loaded, text, steps=args.steps, rule=r, max_len=args.length), args.repeats
        )
        rel = result.ig_error / max(abs(result.ig_delta), 1e-12)
        print(
            f"attribute, IG {args.steps} steps ({rule}): median {med:7.1f} ms (min {best:.1f}); "
            f"completeness error {result.ig_error:.2e} ({rel:.2%} of |F(x) - F(baseline)|)"
        )
    page = {"target": "positive", "score": "log-odds", "baseline": "unk"}  # what the Classifier page explains
    result = attribute(loaded, text, steps=args.steps, max_len=args.length, **page)
    med, best = median_ms(lambda: attribute(loaded, text, steps=args.steps, max_len=args.length, **page), args.repeats)
    rel = result.ig_error / max(abs(result.ig_delta), 1e-12)
    print(
        f"attribute as on the page (log-odds of positive, <unk> baseline): median {med:7.1f} ms (min {best:.1f}); "
        f"completeness error {result.ig_error:.2e} ({rel:.2%})"
    )
    _, ids = sentence_ids(loaded, text, args.length)
    med, best = median_ms(lambda: head_effects(loaded.model, ids, 1), args.repeats)
    variants = 1 + loaded.config.num_layers * (loaded.config.num_heads + 1)
    print(f"head ranking ({variants} gate sets in one batch): median {med:7.1f} ms (min {best:.1f})")
    texts = [" ".join(words[(i * 7 + j) % len(words)] for j in range(20 + i % 100)) for i in range(256)]
    med, best = median_ms(lambda: predict_batch(loaded, texts, args.length), max(3, args.repeats // 2))
    print(f"predict_batch, 256 sentences of 20-119 tokens: median {med:7.1f} ms (min {best:.1f})")


if __name__ == "__main__":
    main()
