"""Time one ``analyze`` call (all layers' per-head weights and scores) for inputs of several lengths.

Run: python bench/bench_analyze.py [--model assets/models/imdb-sentiment] [--device cpu] [--repeats 7]
Prints the median wall time per length; README reports the numbers.
"""

from __future__ import annotations

import statistics
import time

import torch
from shared import filler_text, load, model_parser

from transformer import analyze


def main() -> None:
    args = model_parser(__doc__).parse_args()
    loaded = load(args)
    print(f"model {args.model} on {args.device}, {torch.get_num_threads()} thread(s)")
    for length in (16, 128, 512, 1024):
        text = filler_text(loaded, length)
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
