"""Time the Classifier page's per-sentence work on one 128-token sentence: ``attribute`` (rollout,
gradient × input, integrated gradients with 50 steps as one batch), the head ranking, and batch
prediction of 256 sentences.

Run: python bench/bench_attribution.py [--model assets/models/imdb-sentiment] [--device cpu] [--repeats 7]
Prints median wall times (target for ``attribute``: under 1 s on CPU); README reports the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer import load_model, resolve_device  # noqa: E402
from transformer.ablation import head_effects  # noqa: E402
from transformer.attribution import attribute, sentence_ids  # noqa: E402
from transformer.predict import predict_batch  # noqa: E402


def median_ms(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times), 1000 * min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="assets/models/imdb-sentiment")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--length", type=int, default=128)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, resolve_device(args.device))
    words = loaded.vocab.itos[10:600]
    text = " ".join(words[i % len(words)] for i in range(args.length))
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
    _, ids = sentence_ids(loaded, text, args.length)
    med, best = median_ms(lambda: head_effects(loaded.model, ids, 1), args.repeats)
    variants = 1 + loaded.config.num_layers * (loaded.config.num_heads + 1)
    print(f"head ranking ({variants} gate sets in one batch): median {med:7.1f} ms (min {best:.1f})")
    texts = [" ".join(words[(i * 7 + j) % len(words)] for j in range(20 + i % 100)) for i in range(256)]
    med, best = median_ms(lambda: predict_batch(loaded, texts, args.length), max(3, args.repeats // 2))
    print(f"predict_batch, 256 sentences of 20-119 tokens: median {med:7.1f} ms (min {best:.1f})")


if __name__ == "__main__":
    main()
