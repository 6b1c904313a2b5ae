"""Time decoding on the bundled translation models: ms per generated token for plain greedy
decoding (``EncoderDecoder.greedy_decode``, no weights kept) and for the page's step view
(``translation.decode``: every step's self- and cross-attention rows and probabilities).

Run: python bench/bench_decoding.py [--model assets/models/en-ko-order] [--repeats 7]
Prints medians over the task's example sentences; README reports the numbers.
"""

from __future__ import annotations

import statistics
import time

import torch
from shared import load, model_parser

from transformer.translation import get_task
from transformer.translation.decode import DecodeOptions, decode
from transformer.translation.vocab import source_ids

TASKS = {"en-ko-order": "word-order", "dates": "dates"}


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = model_parser(__doc__)
    p.set_defaults(model="assets/models/en-ko-order")
    args = p.parse_args()
    loaded = load(args)
    task = get_task(TASKS[loaded.name])
    print(f"model {args.model} on {args.device}, {torch.get_num_threads()} thread(s)")
    per_token_greedy, per_token_steps, views = [], [], []
    for pair in task.examples():
        ids = source_ids(loaded.vocab, pair)
        src = torch.tensor([ids])
        generated = len(decode(loaded, ids).steps)
        greedy = timed(lambda src=src, n=2 * len(ids) + 10: loaded.model.greedy_decode(src, n), args.repeats)
        steps = timed(lambda ids=ids: decode(loaded, ids, DecodeOptions()), args.repeats)
        per_token_greedy.append(1000 * greedy / generated)
        per_token_steps.append(1000 * steps / generated)
        views.append(1000 * steps)
        print(f"{len(ids):2d} source tokens, {generated:2d} generated: greedy {1000 * greedy:6.1f} ms, "
              f"step view {1000 * steps:6.1f} ms")  # fmt: skip
    print(
        f"median ms per generated token: greedy {statistics.median(per_token_greedy):.2f}, "
        f"step view {statistics.median(per_token_steps):.2f}; whole step view {statistics.median(views):.1f} ms"
    )


if __name__ == "__main__":
    main()
