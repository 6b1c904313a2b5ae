"""Bytes the Attention page sends to the browser for one 512-token input, before and after compaction.

Run: python bench/bench_attention_payload.py [--model assets/models/imdb-sentiment] [--tokens 512]
"Before" is the straightforward figure: every weight as a JSON number (z as nested lists), the
full T × T heatmap, and the all-heads grid as L × H heatmaps. "After" is what the page sends:
float32 binary arrays, a token window of 64 rows (with 64 or all key columns), and the grid as
PNG thumbnails. Prints the bytes of each figure's JSON (what ``st.plotly_chart`` sends) and the
time to build it; docs/benchmarks.md reports the numbers.
"""

from __future__ import annotations

import time

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from shared import filler_text, load, model_parser

from transformer import analyze
from ui.figures import attention as figs
from ui.figures.common import token_labels

WINDOW = 64


def naive_heatmap(weights: np.ndarray, tokens: list[str]) -> go.Figure:
    """The figure without compaction: z as lists of Python floats (JSON numbers)."""
    labels = token_labels(tokens)
    return go.Figure(go.Heatmap(z=weights.astype(np.float64).tolist(), x=labels, y=labels, colorscale="Blues"))


def naive_grid(attention: np.ndarray) -> go.Figure:
    """All heads as L × H full heatmaps, z as lists."""
    layers, heads = attention.shape[:2]
    fig = make_subplots(rows=layers, cols=heads)
    for layer in range(layers):
        for head in range(heads):
            z = attention[layer, head].astype(np.float64).tolist()
            fig.add_trace(go.Heatmap(z=z, showscale=False), row=layer + 1, col=head + 1)
    return fig


def measure(name: str, build) -> tuple[str, int, float]:
    start = time.perf_counter()
    fig = build()
    built = time.perf_counter() - start
    return name, figs.payload_bytes(fig), built


def main() -> None:
    p = model_parser(__doc__)
    p.add_argument("--tokens", type=int, default=512)
    args = p.parse_args()
    loaded = load(args)
    result = analyze(loaded, [filler_text(loaded, args.tokens)], max_len=args.tokens)
    attn, tokens = result.attention_for(0), result.tokens[0]
    head = attn[0, 0]
    n = len(tokens)
    print(f"model {args.model}: {attn.shape[0]} layers x {attn.shape[1]} heads, input of {n} tokens")
    rows = [
        measure("before: heatmap T x T, JSON numbers", lambda: naive_heatmap(head, tokens)),
        measure("before: grid L x H heatmaps, JSON numbers", lambda: naive_grid(attn)),
        measure("after: heatmap T x T, float32 binary", lambda: figs.attention_heatmap(head, tokens)),
        measure(
            f"after: heatmap {WINDOW} x {n} window, float32",
            lambda: figs.attention_heatmap(head[:WINDOW], tokens[:WINDOW], tokens),
        ),
        measure(
            f"after: heatmap {WINDOW} x {WINDOW} window, float32",
            lambda: figs.attention_heatmap(head[:WINDOW, :WINDOW], tokens[:WINDOW]),
        ),
        measure("after: grid as PNG thumbnails", lambda: figs.head_grid(attn, (0, 0))),
        measure(
            f"after: line view {WINDOW} tokens, 3 strongest keys per query (the default)",
            lambda: figs.attention_lines(head[:WINDOW, :WINDOW], tokens[:WINDOW]),
        ),
        measure(
            f"after: line view {WINDOW} tokens, every weight >= 0.02",
            lambda: figs.attention_lines(head[:WINDOW, :WINDOW], tokens[:WINDOW], threshold=0.02, top_k=None),
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':<{width}}  {'bytes':>12}  {'build ms':>9}")
    for name, size, built in rows:
        print(f"{name:<{width}}  {size:>12,}  {1000 * built:>9.1f}")
    before = rows[0][1] + rows[1][1]
    after = rows[4][1] + rows[5][1] + rows[6][1]
    print(f"page total before (full heatmap + grid): {before:,} bytes")
    print(
        f"page total after (default {WINDOW}-token window + grid + lines): {after:,} bytes ({before / after:.0f}x less)"
    )


if __name__ == "__main__":
    main()
