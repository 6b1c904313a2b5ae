"""Time one image analysed by each bundled vision model (every layer's per-head weights), and
measure what the Vision page sends to the browser (its figures' JSON).

Run: python bench/bench_vision.py [--threads 1] [--repeats 15]
Prints medians; docs/benchmarks.md reports the numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import plotly.io as pio
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer.vision import analyze_images, load_vision_bundle  # noqa: E402
from transformer.vision.maps import (  # noqa: E402
    filter_components,
    position_similarity,
    query_maps,
    rollout_maps,
    similarity_mosaic,
)
from ui.figures import vision as figs  # noqa: E402

MODELS = ROOT / "assets" / "models"


def page_figures(loaded, result) -> list:
    """The figures the Vision page draws for one picture with its default choices."""
    c = loaded.config
    attn, image = result.attention[0], result.images[0]
    maps = query_maps(attn, 0, c.grid, 1)
    out = [figs.image_figure(image, "picture")]
    if c.task == "classification":
        out.append(figs.probability_bars(result.probabilities[0], c.label_names))
    else:
        out.append(figs.mask_pair(result.mask[0], result.mask[0], c.label_names))
    out.append(figs.attention_overlay(image, maps[-1, 0], c.patch_size, "overlay"))
    out.append(figs.attention_overlay(image, rollout_maps(attn, 0, c.grid, 1)[-1], c.patch_size, "rollout"))
    out.append(figs.head_grid(maps, image, c.patch_size))
    query = query_maps(attn, 1 + c.num_patches // 2, c.grid, 1)
    out += [figs.attention_overlay(image, query[-1, h], c.patch_size, "patch") for h in range(c.num_heads)]
    pos = loaded.model.positional_embedding.detach().numpy()[0, 1:]
    out.append(figs.similarity_figure(similarity_mosaic(position_similarity(pos), c.grid), c.grid))
    comps, explained = filter_components(
        loaded.model.patch_embedding.weight.detach().numpy(), c.channels, c.patch_size, 14
    )
    out.append(figs.filters_figure(comps, explained))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    for name in ("vit-digits", "vit-shapes"):
        loaded = load_vision_bundle(MODELS / name)
        c = loaded.config
        image = np.random.default_rng(0).random((1, c.channels, c.image_size, c.image_size), dtype=np.float32)
        analyze_images(loaded, image)  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = analyze_images(loaded, image)
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        figures = page_figures(loaded, result)
        build = time.perf_counter() - start
        payload = sum(len(pio.to_json(f, validate=False).encode("utf-8")) for f in figures)
        print(
            f"{name}: {c.num_tokens} tokens, attention {result.attention.shape}; analyse one image: median "
            f"{1000 * statistics.median(times):.2f} ms (min {1000 * min(times):.2f}); "
            f"{len(figures)} page figures built in {1000 * build:.0f} ms, {payload / 1e3:.0f} KB of figure JSON"
        )


if __name__ == "__main__":
    main()
