"""Figures of the Train page: pure functions (numpy in, plotly Figure out).

Every figure sets its fonts explicitly (at least 16 px, #111) through ``legible``; ``meta`` names
the figure for the tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.i18n import translate

from .common import SEQUENTIAL, legible, token_labels

LOSS_COLOUR, ACCURACY_COLOUR, MARK_COLOUR = "#1f77b4", "#d62728", "#6B7280"
HEAD_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


def _mark(fig: go.Figure, step: int | None, cols: int) -> None:
    """A dashed vertical line at ``step`` in every column (the snapshot shown below)."""
    if step is None:
        return
    for col in range(1, cols + 1):
        fig.add_vline(x=step, line=dict(color=MARK_COLOUR, dash="dash", width=2), row=1, col=col)


def training_curves(
    steps: Sequence[int],
    loss: Sequence[float],
    accuracy: Sequence[float],
    exact: Sequence[float],
    lang: str = "en",
    marked: int | None = None,
) -> go.Figure:
    """Training loss (left) and held-out accuracy per answer token and per whole row (right) over
    steps; a dashed line at step ``marked``."""
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.12,
        subplot_titles=(translate("train.fig_loss", lang), translate("train.fig_accuracy", lang)),
    )  # fmt: skip
    steps = np.asarray(steps)
    fig.add_trace(go.Scatter(x=steps, y=np.asarray(loss), mode="lines+markers", name=translate("train.fig_loss", lang),
                             line=dict(color=LOSS_COLOUR, width=3), showlegend=False), row=1, col=1)  # fmt: skip
    fig.add_trace(go.Scatter(x=steps, y=np.asarray(accuracy), mode="lines+markers",
                             name=translate("train.fig_token_accuracy", lang),
                             line=dict(color=ACCURACY_COLOUR, width=3)), row=1, col=2)  # fmt: skip
    fig.add_trace(go.Scatter(x=steps, y=np.asarray(exact), mode="lines", name=translate("train.fig_exact", lang),
                             line=dict(color=ACCURACY_COLOUR, width=2, dash="dot")), row=1, col=2)  # fmt: skip
    _mark(fig, marked, 2)
    step_title = translate("train.fig_step", lang)
    fig.update_xaxes(title_text=step_title)
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    # the legend hangs below the axis title (anchored at its top: anchored at its bottom it covered the title)
    fig.update_layout(height=360, margin=dict(l=20, r=20, t=60, b=20), meta="train-curves",
                      legend=dict(orientation="h", x=1.0, xanchor="right", y=-0.3, yanchor="top"))  # fmt: skip
    return legible(fig)


def head_score_curves(
    steps: Sequence[int],
    induction: np.ndarray,
    previous: np.ndarray,
    lang: str = "en",
    marked: int | None = None,
) -> go.Figure:
    """Each head's induction score (left) and previous-token score (right) over steps; ``induction``
    and ``previous`` are (S, L, H) for S snapshots. A head keeps its colour in both."""
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.12,
        subplot_titles=(translate("train.fig_induction", lang), translate("train.fig_previous", lang)),
    )  # fmt: skip
    steps = np.asarray(steps)
    _, layers, heads = induction.shape
    for layer in range(layers):
        for head in range(heads):
            name = translate("train.fig_head_name", lang, layer=layer + 1, head=head + 1)
            colour = HEAD_COLOURS[head % len(HEAD_COLOURS)]
            dash = ("solid", "dot", "dash", "dashdot")[layer % 4]
            for col, values in ((1, induction), (2, previous)):
                fig.add_trace(go.Scatter(x=steps, y=values[:, layer, head], mode="lines", name=name,
                                         legendgroup=name, showlegend=col == 1,
                                         line=dict(color=colour, dash=dash, width=2.5)), row=1, col=col)  # fmt: skip
    _mark(fig, marked, 2)
    fig.update_xaxes(title_text=translate("train.fig_step", lang))
    fig.update_yaxes(range=[0, 1.02])
    rows = -(-layers * heads // 8)  # legend rows below the plots, eight heads a row
    fig.update_layout(height=360 + 28 * rows, margin=dict(l=20, r=20, t=60, b=20), meta="train-head-scores",
                      legend=dict(orientation="h", x=0.0, y=-0.32, yanchor="top"))  # fmt: skip
    return legible(fig)


def attention_grid(attention: np.ndarray, tokens: Sequence[str], lang: str = "en", step: int = 0) -> go.Figure:
    """Every head's attention (``attention`` (L, H, T, T), rows = queries) on one row of ``tokens``:
    one heatmap per layer (rows of the grid) and head (columns), query tokens down, key tokens across."""
    layers, heads, t, _ = attention.shape
    labels = token_labels(list(tokens))
    titles = [
        translate("train.fig_head_name", lang, layer=lay + 1, head=h + 1) for lay in range(layers) for h in range(heads)
    ]
    fig = make_subplots(rows=layers, cols=heads, subplot_titles=titles,
                        horizontal_spacing=0.03, vertical_spacing=0.12 / max(layers - 1, 1) + 0.04)  # fmt: skip
    hover = translate("train.fig_attention_hover", lang)
    for layer in range(layers):
        for head in range(heads):
            fig.add_trace(
                go.Heatmap(z=attention[layer, head], x=labels, y=labels, zmin=0, zmax=1, colorscale=SEQUENTIAL,
                           showscale=layer == 0 and head == 0, hovertemplate=hover + "<extra></extra>",
                           colorbar=dict(title=translate("train.fig_weight", lang), len=0.6)),
                row=layer + 1, col=head + 1,
            )  # fmt: skip
    fig.update_xaxes(showticklabels=heads * t <= 60, tickangle=-90)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_yaxes(showticklabels=True, col=1)
    fig.update_layout(
        height=max(320, 230 * layers + 60), margin=dict(l=20, r=20, t=90, b=20), meta="train-attention",
        title=dict(text=translate("train.fig_attention_title", lang, step=step), x=0.0),
    )  # fmt: skip
    return legible(fig)
