"""Time the figures of the Positional encoding and Masks pages at their largest settings, and the size of
what goes to the browser (plotly JSON).

Run: python bench/bench_teaching_figures.py [--model assets/models/imdb-sentiment] [--repeats 3]
Prints the median build time (figure objects + JSON) and the JSON size per case.
"""

from __future__ import annotations

import statistics
import time
from functools import partial

import numpy as np
import torch
from shared import filler_words, load, model_parser

from transformer.analysis.stepper import head_steps
from transformer.core.positional import sinusoidal_encoding, wavelengths
from ui.figures import masks as mf
from ui.figures import positional as pf
from ui.figures import stepper as sf


def positional_figures(length: int, d_model: int) -> list:
    pe = sinusoidal_encoding(length, d_model)
    periods = wavelengths(d_model)
    return [
        pf.encoding_heatmap(pe, "PE"),
        pf.dimension_curves(pe, pf.default_dimensions(d_model), periods),
        pf.wavelength_figure(periods),
        pf.similarity_heatmap(pe),
        pf.distance_profile(pe),
    ]


def mask_figures(loaded, length: int) -> list:
    words = filler_words(loaded)
    ids = torch.tensor([[loaded.vocab.token_to_id(words[i % len(words)]) for i in range(length)]])
    steps = head_steps(loaded, ids, loaded.config.num_layers - 1, 0)
    labels = [f"{i}:{words[i % len(words)]}" for i in range(length)]
    numbers = length <= mf.NUMBERS_UP_TO
    blocked = np.triu(np.ones((length, length), bool), 1)
    return [
        mf.mask_heatmap(~blocked, labels, "m", changed=blocked),
        *(
            sf.stage_heatmap(m, labels, labels, "s", "s", blocked=blocked, numbers=numbers)
            for m in (steps.scores, steps.scaled, steps.masked, steps.weights)
        ),
        sf.query_walkthrough(labels, 1, steps.scaled[1], steps.weights[1], blocked[1]),
        sf.weighted_sum_heatmap(labels, 1, steps.weights[1], steps.v, numbers),
    ]


def timed(build, repeats: int) -> tuple[float, float]:
    """(median seconds to build and serialise, megabytes of JSON)."""
    times, size = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        size = sum(len(fig.to_json()) for fig in build())
        times.append(time.perf_counter() - start)
    return statistics.median(times), size / 1e6


def main() -> None:
    args = model_parser(__doc__, repeats=3).parse_args()
    loaded = load(args)
    timed(lambda: positional_figures(10, 8), 1)  # warm-up: plotly builds its validators once
    for length, d_model in ((100, 128), (512, 512), (2048, 1024)):
        seconds, mb = timed(partial(positional_figures, length, d_model), args.repeats)
        print(f"positional {length:4d} x {d_model:4d}: {1000 * seconds:7.1f} ms, {mb:.2f} MB JSON")
    for length in (7, 12, 24, 64):  # the Masks page cuts sentences at 64 tokens
        seconds, mb = timed(partial(mask_figures, loaded, length), args.repeats)
        print(f"masks step-by-step {length:4d} tokens: {1000 * seconds:7.1f} ms, {mb:.2f} MB JSON")


if __name__ == "__main__":
    main()
