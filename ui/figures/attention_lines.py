"""The token-to-token line view of one head (bertviz's head view): a pure function, numpy in, plotly out;
and the checks and layout every Attention-page figure shares (``ui.figures.attention`` imports them)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import FONT_SIZE, TEXT_COLOUR, plain_figure, projector_layout, token_labels

ROW_PX = 22  # a heatmap row or a line-view token needs this many pixels to be read
MIN_HEIGHT = 480
LINE_BINS = 6  # line widths come in this many steps (one plotly trace each)
MAX_LINES = 4000


def _matrix(weights: np.ndarray, name: str = "weights") -> np.ndarray:
    """A finite 2-D float32 array (float32: the browser gets 4 bytes a cell, not 8)."""
    w = np.asarray(weights)
    if w.ndim != 2:
        raise ValueError(f"{name} must be 2-D (queries, keys); got shape {w.shape}.")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} has NaN or infinite entries.")
    return np.ascontiguousarray(w, dtype=np.float32)


def _layout(title: str, height: int, meta: str, **extra) -> dict:
    """The whole layout as one dict, every font explicit (``projector_layout``): the figure is made
    with one ``go.Figure`` call, without ``update_*`` calls that each re-validate it (a layer or head
    change rebuilds the heatmap and the lines, so their cost is paid on every click)."""
    return projector_layout(title, height, meta, FONT_SIZE + 4, dict(l=10, r=10, t=60, b=10), **extra)


def top_k_mask(w: np.ndarray, k: int) -> np.ndarray:
    """(T, T) bool: True at each row's ``k`` largest weights (ties broken by position)."""
    mask = np.zeros(w.shape, dtype=bool)
    if k > 0 and w.size:
        order = np.argsort(-w, axis=1, kind="stable")[:, : min(k, w.shape[1])]
        np.put_along_axis(mask, order, True, axis=1)
    return mask


def _line_pairs(
    w: np.ndarray, threshold: float, focus: int | None, max_lines: int, top_k: int | None = None
) -> tuple[np.ndarray, ...]:
    """(query, key, weight) of the weights at or above ``threshold`` (and among the row's ``top_k``
    strongest when given), strongest ``max_lines`` kept."""
    mask = w >= threshold
    if top_k is not None:
        mask &= top_k_mask(w, top_k)
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
    threshold: float = 0.0,
    top_k: int | None = 3,
    focus: int | None = None,
    title: str = "Token to token",
    max_lines: int = MAX_LINES,
    meta: str = "attention-lines",
    lang: str = "en",
) -> go.Figure:
    """The head view of bertviz: queries on the left, keys on the right, one line from query i to
    key j for each weight (T, T) at or above ``threshold`` and among row i's ``top_k`` largest
    (None: every weight above the threshold); thicker and darker for larger weights.
    ``focus``: only the lines of that query (row index within ``weights``)."""
    w = _matrix(weights)
    if w.shape != (len(tokens), len(tokens)):
        raise ValueError(f"weights {w.shape} do not fit {len(tokens)} tokens.")
    labels = token_labels(tokens, start)
    q, k, v = _line_pairs(w, threshold, focus, max_lines, top_k)
    threshold = float(v.min(initial=threshold)) if top_k is not None else threshold
    edges = np.linspace(threshold, max(float(v.max(initial=threshold)), threshold + 1e-6), LINE_BINS + 1)
    step = np.clip(np.digitize(v, edges[1:-1]), 0, LINE_BINS - 1)
    traces = [
        _line_trace(q[step == b], k[step == b], (b + 1) / LINE_BINS) for b in range(LINE_BINS) if (step == b).any()
    ]
    traces.append(_line_hover(q, k, v, labels))
    for x, side in ((0, "middle left"), (1, "middle right")):
        role = translate("figures.query" if x == 0 else "figures.key", lang)
        traces.append(
            dict(
                type="scatter",
                x=[x] * len(labels),
                y=-np.arange(len(labels)),
                mode="markers+text",
                text=labels,
                textposition=side,
                textfont=dict(size=FONT_SIZE, color=TEXT_COLOUR),
                marker=dict(size=7, color="#374151"),
                hovertemplate=f"{role} %{{text}}<extra></extra>",
                showlegend=False,
            )
        )
    height = max(MIN_HEIGHT, 110 + ROW_PX * len(labels))
    axes = dict(
        xaxis=dict(visible=False, range=[-0.9, 1.9]), yaxis=dict(visible=False, range=[-len(labels) + 0.5, 0.8])
    )
    return plain_figure(traces, _layout(title, height, meta, **axes), encode_arrays=True)


def _line_trace(q: np.ndarray, k: np.ndarray, strength: float) -> dict:
    """One trace of same-width segments query (x=0) -> key (x=1), separated by gaps (None); their hover
    text is on :func:`_line_hover`'s points."""
    n = len(q)
    x = np.tile(np.array([0.0, 1.0, np.nan]), n)
    y = np.column_stack([-q, -k, np.full(n, np.nan)]).ravel()
    colour = f"rgba(8, 69, 148, {0.25 + 0.7 * strength:.2f})"
    return dict(
        type="scatter",
        x=x,
        y=y,
        mode="lines",
        line=dict(width=1 + 7 * strength, color=colour),
        hoverinfo="skip",
        showlegend=False,
    )


HOVER_AT = 0.2  # where along a line (0: query, 1: key) its hover point lies


def _line_hover(q: np.ndarray, k: np.ndarray, v: np.ndarray, labels: list[str]) -> dict:
    """An invisible point on each line, a fifth of the way from its query, that says 'query → key: weight'
    on hover: one text a line (the lines' own points would need three), and a place where a query's lines
    have fanned out (their ends are shared, and lines whose rows add up alike all cross at the middle)."""
    pairs = zip(q.tolist(), k.tolist(), v.tolist())  # Python numbers: formatting numpy scalars is slower
    return dict(
        type="scatter",
        x=np.full(len(q), HOVER_AT),
        y=-((1 - HOVER_AT) * q + HOVER_AT * k),
        mode="markers",
        marker=dict(size=14, color="rgba(0,0,0,0)"),  # transparent, as the grid's click targets: hover still finds it
        text=[f"{labels[i]} → {labels[j]}: {val:.3f}" for i, j, val in pairs],
        hovertemplate="%{text}<extra></extra>",
        showlegend=False,
    )
