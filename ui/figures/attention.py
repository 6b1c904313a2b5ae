"""Figures of the Attention page: one head's heatmap, every head at a glance, token-to-token lines.

Pure functions: numpy in, ``plotly.graph_objects.Figure`` out; in a notebook, ``fig.show()``.
Sizes matter for inputs of up to 512 tokens: weights go to the browser as float32 arrays,
which plotly sends as binary (about 5 bytes a cell, against about 20 as JSON numbers), and the
all-heads grid goes as small PNG images. ``payload_bytes`` measures what a figure costs.
"""

from __future__ import annotations

import base64
import functools
import io

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from PIL import Image
from plotly.colors import sample_colorscale

from .common import FONT_SIZE, SEQUENTIAL, escape, token_labels

ROW_PX = 22  # a heatmap row or a line-view token needs this many pixels to be read
MIN_HEIGHT, MAX_HEATMAP_HEIGHT = 480, 980
THUMB_PX = 64  # largest thumbnail side, in image pixels
THUMB_CELL_PX = 118  # displayed size of one thumbnail in the grid
LINE_BINS = 6  # line widths come in this many steps (one plotly trace each)
MAX_LINES = 4000
SELECTED_COLOUR = "#C2410C"


def payload_bytes(fig: go.Figure) -> int:
    """Bytes of the figure's JSON as Streamlit sends it to the browser."""
    return len(pio.to_json(fig, validate=False).encode("utf-8"))


def _matrix(weights: np.ndarray, name: str = "weights") -> np.ndarray:
    """A finite 2-D float32 array (float32: the browser gets 4 bytes a cell, not 8)."""
    w = np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(f"{name} must be 2-D (queries, keys); got shape {w.shape}.")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} has NaN or infinite entries.")
    return np.ascontiguousarray(w, dtype=np.float32)


def _layout(fig: go.Figure, title: str, height: int, meta: str) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, font=dict(size=FONT_SIZE + 4)),
        height=height,
        meta=meta,
        font=dict(size=FONT_SIZE),
        hoverlabel=dict(font_size=FONT_SIZE),
        margin=dict(l=10, r=10, t=60, b=10),
    )
    return fig


def attention_heatmap(
    weights: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str] | None = None,
    *,
    query_start: int = 0,
    key_start: int = 0,
    title: str = "Attention",
    zmax: float | None = None,
    value_name: str = "weight",
    meta: str = "attention-heatmap",
) -> go.Figure:
    """weights (Tq, Tk): query tokens as rows (top to bottom), key tokens as columns; hover gives
    the pair and the weight. ``query_start``/``key_start`` are the positions of the first row and
    column in the input (for a window of a long input). Colours run from 0 to ``zmax`` (default:
    the largest weight shown, so that the small weights of a long input still show)."""
    w = _matrix(weights)
    key_tokens = query_tokens if key_tokens is None else key_tokens
    if w.shape != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights {w.shape} do not fit {len(query_tokens)} query and {len(key_tokens)} key tokens.")
    top = float(zmax) if zmax is not None else max(float(w.max(initial=0.0)), 1e-6)
    fig = go.Figure(
        go.Heatmap(
            z=w,
            x=token_labels(key_tokens, key_start),
            y=token_labels(query_tokens, query_start),
            zmin=0.0,
            zmax=top,
            colorscale=SEQUENTIAL,
            colorbar=dict(title=dict(text=value_name), thickness=16),
            hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{escape(value_name)} %{{z:.4f}}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", type="category", title="query (row)", automargin=True)
    fig.update_xaxes(type="category", title="key (column)", tickangle=-60, automargin=True, side="bottom")
    height = int(np.clip(160 + ROW_PX * w.shape[0], MIN_HEIGHT, MAX_HEATMAP_HEIGHT))
    return _layout(fig, title, height, meta)


def _pool_max(w: np.ndarray, size: int) -> np.ndarray:
    """(T, T) -> (ceil(T/k), ceil(T/k)) with k = ceil(T/size): each pixel is its block's maximum,
    so a single strong weight stays visible in a thumbnail."""
    k = max(1, -(-w.shape[0] // size))
    rows, cols = -(-w.shape[0] // k), -(-w.shape[1] // k)
    padded = np.zeros((rows * k, cols * k), dtype=w.dtype)
    padded[: w.shape[0], : w.shape[1]] = w
    return padded.reshape(rows, k, cols, k).max(axis=(1, 3))


@functools.cache  # a constant: the same table for every call and every session
def _colour_table() -> np.ndarray:
    """(256, 3) uint8: the sequential colour scale as a lookup table."""
    colours = sample_colorscale(SEQUENTIAL, [i / 255 for i in range(256)])
    return np.array([[int(float(c)) for c in s[s.index("(") + 1 : -1].split(",")] for s in colours], dtype=np.uint8)


def thumbnail_png(weights: np.ndarray, size: int = THUMB_PX) -> bytes:
    """One head (T, T) as a PNG of at most ``size`` × ``size`` pixels, scaled to its own maximum."""
    w = _pool_max(_matrix(weights), size)
    top = float(w.max(initial=0.0))
    levels = np.zeros(w.shape, dtype=np.uint8) if top <= 0 else np.round(w / top * 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(_colour_table()[levels], mode="RGB").save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def head_grid(
    attention: np.ndarray,
    selected: tuple[int, int] | None = None,
    *,
    title: str = "All layers × heads",
    size: int = THUMB_PX,
    meta: str = "attention-grid",
) -> go.Figure:
    """attention (L, H, T, T) -> an L × H grid of PNG thumbnails (row = layer, column = head),
    each scaled to its own maximum; ``selected`` (layer, head), 0-based, is outlined."""
    a = np.asarray(attention)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2] or 0 in a.shape[:2]:
        raise ValueError(f"attention must be (layers, heads, T, T) with at least one head; got shape {a.shape}.")
    layers, heads = a.shape[:2]
    height = 70 + THUMB_CELL_PX * layers
    axes, notes = _grid_axes(layers, heads, plot_px=height - 70)
    traces = []
    for layer in range(layers):
        for head in range(heads):
            png = base64.b64encode(thumbnail_png(a[layer, head], size)).decode("ascii")
            suffix = _axis_suffix(layer * heads + head)
            hover = f"layer {layer + 1}, head {head + 1}<extra></extra>"
            traces.append(
                go.Image(
                    source=f"data:image/png;base64,{png}", xaxis=f"x{suffix}", yaxis=f"y{suffix}", hovertemplate=hover
                )
            )
    # One Figure call instead of make_subplots + add_trace: 10x faster for a 12 x 12 grid.
    fig = go.Figure(data=traces, layout=dict(annotations=notes, **axes))
    if selected is not None:
        _outline(fig, selected, heads, _thumb_side(a.shape[-1], size))
    return _layout(fig, title, height, meta)


def _axis_suffix(n: int) -> str:
    """Plotly names the axes of the n-th subplot (0-based) x, x2, x3, ..."""
    return "" if n == 0 else str(n + 1)


def _grid_axes(layers: int, heads: int, plot_px: int) -> tuple[dict, list[dict]]:
    """Axes (hidden, square) and 'L1 H1' titles for an L × H grid, first layer on top."""
    title_frac = min(0.45 / layers, 24 / plot_px)  # room for a title line above each thumbnail
    gap = 0.02
    axes, notes = {}, []
    for layer in range(layers):
        top = 1 - layer / layers
        for head in range(heads):
            s = _axis_suffix(layer * heads + head)
            x0, x1 = head / heads + gap / 2, (head + 1) / heads - gap / 2
            axes[f"xaxis{s}"] = dict(domain=[x0, x1], visible=False, anchor=f"y{s}")
            axes[f"yaxis{s}"] = dict(
                domain=[top - 1 / layers + gap / 2, top - title_frac],
                visible=False,
                anchor=f"x{s}",
                scaleanchor=f"x{s}",
                constrain="domain",
            )
            text = f"L{layer + 1} H{head + 1}"
            notes.append(
                dict(
                    text=text,
                    x=(x0 + x1) / 2,
                    y=top - title_frac,
                    xref="paper",
                    yref="paper",
                    yanchor="bottom",
                    showarrow=False,
                    font=dict(size=FONT_SIZE - 2),
                )
            )
    return axes, notes


def _thumb_side(t: int, size: int) -> int:
    """Pixels along one side of the thumbnail of a (t, t) head (see ``_pool_max``)."""
    k = max(1, -(-t // size))
    return -(-t // k)


def _outline(fig: go.Figure, selected: tuple[int, int], heads: int, side: int) -> None:
    """A frame around subplot ``selected`` (layer, head); its image spans -0.5 .. side - 0.5."""
    layer, head = selected
    suffix = _axis_suffix(layer * heads + head)
    pad = 0.5 + side / 30
    fig.add_shape(
        type="rect",
        xref=f"x{suffix}",
        yref=f"y{suffix}",
        x0=-pad,
        y0=-pad,
        x1=side - 1 + pad,
        y1=side - 1 + pad,
        line=dict(color=SELECTED_COLOUR, width=4),
    )


def _line_pairs(w: np.ndarray, threshold: float, focus: int | None, max_lines: int) -> tuple[np.ndarray, ...]:
    """(query, key, weight) of the weights at or above ``threshold``, strongest ``max_lines`` kept."""
    mask = w >= threshold
    if focus is not None:
        mask[np.arange(w.shape[0]) != focus] = False
    q, k = np.nonzero(mask)
    v = w[q, k]
    if v.size > max_lines:
        keep = np.argsort(v)[-max_lines:]
        q, k, v = q[keep], k[keep], v[keep]
    return q, k, v


def attention_lines(
    weights: np.ndarray,
    tokens: list[str],
    *,
    start: int = 0,
    threshold: float = 0.1,
    focus: int | None = None,
    title: str = "Token to token",
    max_lines: int = MAX_LINES,
    meta: str = "attention-lines",
) -> go.Figure:
    """The head view of bertviz: queries on the left, keys on the right, one line from query i to
    key j for each weight (T, T) at or above ``threshold``; thicker and darker for larger weights.
    ``focus``: only the lines of that query (row index within ``weights``)."""
    w = _matrix(weights)
    if w.shape != (len(tokens), len(tokens)):
        raise ValueError(f"weights {w.shape} do not fit {len(tokens)} tokens.")
    labels = token_labels(tokens, start)
    q, k, v = _line_pairs(w, threshold, focus, max_lines)
    fig = go.Figure()
    edges = np.linspace(threshold, max(float(v.max(initial=threshold)), threshold + 1e-6), LINE_BINS + 1)
    step = np.clip(np.digitize(v, edges[1:-1]), 0, LINE_BINS - 1)
    for b in range(LINE_BINS):
        sel = step == b
        if sel.any():
            fig.add_trace(_line_trace(q[sel], k[sel], v[sel], labels, (b + 1) / LINE_BINS))
    for x, side in ((0, "middle left"), (1, "middle right")):
        role = "query" if x == 0 else "key"
        fig.add_trace(
            go.Scatter(
                x=[x] * len(labels),
                y=-np.arange(len(labels)),
                mode="markers+text",
                text=labels,
                textposition=side,
                textfont=dict(size=FONT_SIZE, color="#111827"),
                marker=dict(size=7, color="#374151"),
                hovertemplate=f"{role} %{{text}}<extra></extra>",
                showlegend=False,
            )
        )
    fig.update_xaxes(visible=False, range=[-0.9, 1.9])
    fig.update_yaxes(visible=False, range=[-len(labels) + 0.5, 0.8])
    height = max(MIN_HEIGHT, 110 + ROW_PX * len(labels))
    return _layout(fig, title, height, meta)


def _line_trace(q: np.ndarray, k: np.ndarray, v: np.ndarray, labels: list[str], strength: float) -> go.Scatter:
    """One trace of same-width segments query (x=0) -> key (x=1), separated by gaps (None)."""
    n = len(q)
    x = np.tile(np.array([0.0, 1.0, np.nan]), n)
    y = np.column_stack([-q, -k, np.full(n, np.nan)]).ravel()
    text = [s for i, j, val in zip(q, k, v) for s in (f"{labels[i]} → {labels[j]}: {val:.3f}",) * 2 + ("",)]
    colour = f"rgba(8, 69, 148, {0.25 + 0.7 * strength:.2f})"
    return go.Scatter(
        x=x,
        y=y,
        mode="lines",
        text=text,
        line=dict(width=1 + 7 * strength, color=colour),
        hovertemplate="%{text}<extra></extra>",
        showlegend=False,
    )
