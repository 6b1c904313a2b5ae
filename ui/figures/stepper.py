"""Figures of one attention head step by step (the Masks page): scores, scaled scores, the mask applied,
softmax weights, the weighted sum of values, and one query walked through. Numpy in, plotly Figure out.

They share the token grid of :mod:`ui.figures.masks` (layout, cell fonts, unvalidated dict figures).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import DIVERGING, FONT_SIZE, SEQUENTIAL, axis_style, panel_title, plain_figure, tick_angle
from .masks import (
    BLOCKED,
    BLOCKED_TEXT,
    COLORBAR,
    FULL_WIDTH_PX,
    HALF_WIDTH_PX,
    cell_font,
    figure_layout,
    fits,
    grid_layout,
)


def cell_decimals(values: np.ndarray, columns: int, width_px: float) -> int | None:
    """How many decimals (2 or 1) the numbers of ``values`` can have so that the widest one fits in
    its cell (``width_px`` / ``columns`` pixels wide) at CELL_FONT px; None when not even one fits
    (then no numbers are written: they would run into each other)."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    widest = float(np.abs(finite).max()) if finite.size else 0.0
    for decimals in (2, 1):
        if fits(len(f"{-widest:.{decimals}f}"), columns, width_px):
            return decimals
    return None


def _fmt(values: np.ndarray, decimals: int = 2) -> np.ndarray:
    """``decimals`` decimals, without a "-0.00" for tiny negatives."""
    return np.vectorize(lambda x: f"{round(float(x), decimals) + 0.0:.{decimals}f}")(values)


def stage_heatmap(
    matrix: np.ndarray,
    rows: list[str],
    cols: list[str],
    title: str,
    meta: str,
    blocked: np.ndarray | None = None,
    weights: bool = False,
    numbers: bool = True,
    width_px: float = HALF_WIDTH_PX,
    lang: str = "en",
    **layout,
) -> go.Figure:
    """One stage of attention, (T_rows, T_cols). ``blocked`` (same shape, bool) cells are drawn grey and
    labelled −1e9 (scores) or 0 (``weights=True``). Diverging colours around 0, or 0..max for weights.
    Numbers are written in the cells when ``numbers`` and they fit a ``width_px`` wide plot (two
    decimals, or one; none rather than numbers that collide). ``layout`` goes to ``_token_layout``
    (``y_title``, ``shapes``): one validation of the figure, not a second ``update_layout``."""
    values = matrix.astype(np.float32)  # float32 halves what goes to the browser
    open_values = values if blocked is None else np.where(blocked, np.float32(np.nan), values)
    finite = open_values[np.isfinite(open_values)]
    limit = max(float(np.abs(finite).max()) if finite.size else 1.0, 1e-6)
    colours = (
        dict(colorscale=SEQUENTIAL, zmin=0, zmax=limit)
        if weights
        else dict(colorscale=DIVERGING, zmid=0, zmin=-limit, zmax=limit)
    )
    decimals = cell_decimals(finite, len(cols), width_px) if numbers else None
    numbers = decimals is not None
    text = None
    if numbers:  # plotly writes text even in NaN cells: leave blocked cells to the grey layer below
        shown = _fmt(values, decimals)
        text = shown if blocked is None else np.where(blocked, "", shown)
    traces = [
        dict(
            type="heatmap",
            z=open_values,
            x=cols,
            y=rows,
            xgap=1,
            ygap=1,
            colorbar=COLORBAR,
            **colours,
            text=text,
            texttemplate="%{text}" if numbers else None,
            textfont=dict(size=cell_font(len(rows))),
            hovertemplate=translate("figures.query", lang) + " %{y} → %{x}<br>%{z:.4f}<extra></extra>",
            name=meta,
        )
    ]
    if blocked is not None and blocked.any():
        label = "0" if weights else BLOCKED_TEXT
        traces.append(
            dict(
                type="heatmap",
                z=np.where(blocked, np.float32(1), np.float32(np.nan)),
                x=cols,
                y=rows,
                showscale=False,
                colorscale=[[0, BLOCKED], [1, BLOCKED]],
                xgap=1,
                ygap=1,
                text=np.where(blocked, label, "") if numbers else None,
                texttemplate="%{text}" if numbers else None,
                textfont=dict(size=cell_font(len(rows)), color="#444"),
                name="blocked",
                hovertemplate=translate("figures.blocked_hover", lang, value=label) + "<extra></extra>",
            )
        )
    x_title = translate("figures.key" if len(cols) == len(rows) else "figures.head_dimension", lang)
    return plain_figure(traces, grid_layout(title, rows, cols, meta, x_title, width_px, lang, **layout))


def query_walkthrough(
    labels: list[str], query: int, scaled: np.ndarray, weights: np.ndarray, blocked: np.ndarray, lang: str = "en"
) -> go.Figure:
    """One query against every key, two panels: its scaled scores (T,) and softmax weights (T,); blocked (T,)
    bool keys show no score bar (they get −1e9) and weight 0."""
    shown = np.where(blocked, np.nan, scaled)
    bar = dict(textposition="outside", cliponaxis=False, textfont=dict(size=FONT_SIZE))
    traces = [
        dict(
            type="bar",
            x=labels,
            y=shown,
            text=["" if b else f"{v:.2f}" for v, b in zip(scaled, blocked)],
            name=translate("figures.score", lang),
            marker=dict(color=np.where(scaled >= 0, "#2b6cb0", "#c0392b")),
            **bar,
        ),
        dict(
            type="bar",
            x=labels,
            y=weights,
            text=[f"{w:.2f}" for w in weights],
            name=translate("figures.weight", lang),
            xaxis="x2",
            yaxis="y2",
            marker=dict(color=np.where(blocked, BLOCKED, "#2b6cb0")),
            **bar,
        ),
    ]
    if blocked.any():  # a bar of -1e9 cannot be drawn: write it instead
        keys = np.flatnonzero(blocked)
        traces.append(
            dict(
                type="scatter",
                x=[labels[k] for k in keys],
                y=np.zeros(len(keys)),
                mode="text",
                name=translate("figures.blocked", lang),
                text=[BLOCKED_TEXT] * len(keys),
                textposition="top center",
                hoverinfo="skip",
                textfont=dict(size=FONT_SIZE, color="#666"),
            )
        )
    finite = shown[np.isfinite(shown)]
    top = float(np.abs(finite).max()) if finite.size else 1.0
    tilt = tick_angle(labels, HALF_WIDTH_PX)
    titles = [
        panel_title(text, x)
        for text, x in (
            (translate("figures.walk_scores", lang, query=labels[query]), 0.23),
            (translate("figures.walk_weights", lang), 0.77),
        )
    ]
    layout = figure_layout(
        translate("figures.walk_title", lang, query=labels[query]),
        460,
        "walkthrough",
        showlegend=False,
        annotations=titles,
        xaxis=axis_style(None, domain=[0, 0.46], type="category", tickangle=tilt),
        xaxis2=axis_style(None, domain=[0.54, 1], type="category", tickangle=tilt),
        yaxis=axis_style(None, range=[-1.25 * top if (finite < 0).any() else 0, 1.25 * top]),
        yaxis2=axis_style(None, anchor="x2", range=[0, 1.15 * max(float(weights.max()), 1e-6)]),
    )
    layout["margin"]["t"] = 100
    return plain_figure(traces, layout)


def weighted_sum_heatmap(
    labels: list[str], query: int, weights: np.ndarray, v: np.ndarray, numbers: bool = True, lang: str = "en"
) -> go.Figure:
    """Rows weight_j × v_j (T, d_k) for each key j, and their sum: the query's output (d_k,)."""
    parts = weights[:, None] * v  # (T, d_k)
    table = np.vstack([parts, parts.sum(axis=0, keepdims=True)])
    rows = [f"{w:.2f} × v({lab})" for w, lab in zip(weights, labels)] + [
        translate("figures.sum_row", lang, query=labels[query])
    ]
    line = dict(
        type="line",
        xref="paper",
        x0=0,
        x1=1,
        yref="y",
        y0=len(labels) - 0.5,
        y1=len(labels) - 0.5,
        line=dict(color="black", width=4),
    )  # a rule above the sum row
    return stage_heatmap(
        table,
        rows,
        [str(i) for i in range(v.shape[1])],
        translate("figures.sum_title", lang, query=labels[query]),
        "weighted-sum",
        numbers=numbers,
        width_px=FULL_WIDTH_PX,
        lang=lang,
        y_title=None,
        shapes=[line],
    )
