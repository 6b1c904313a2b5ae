"""Time one ``analyze`` call (all layers' per-head weights and scores) for inputs of several lengths.

Run: python bench/bench_analyze.py [--model assets/models/imdb-sentiment] [--device cpu] [--repeats 7]
Prints the median wall time per length; README reports the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transformer import analyze, load_model, resolve_device  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", default="assets/models/imdb-sentiment")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, resolve_device(args.device))
    words = loaded.vocab.itos[10:600]
    print(f"model {args.model} on {args.device}, {torch.get_num_threads()} thread(s)")
    for length in (16, 128, 512):
        text = " ".join(words[i % len(words)] for i in range(length))
        analyze(loaded, [text], max_len=length)  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = analyze(loaded, [text], max_len=length)
            times.append(time.perf_counter() - start)
        mb = (result.attention.nbytes + result.scores.nbytes) / 1e6
        print(
            f"{length:4d} tokens: median {1000 * statistics.median(times):7.1f} ms "
            f"(min {1000 * min(times):.1f}); attention+scores {mb:.1f} MB"
        )


if __name__ == "__main__":
    main()
