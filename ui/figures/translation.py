"""Figures of the Translate page: pure functions (numpy in, plotly Figure out).

Every figure sets its fonts explicitly (at least 16 px, #111) through ``legible``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import (
    CHAR_WIDTH,
    SEQUENTIAL,
    TEXT_COLOUR,
    axis_style,
    browser_scale,
    escape,
    legible,
    projector_layout,
    token_labels,
)

MASKED_COLOUR = "#c8c8c8"
MAX_NUMBERED = 12  # the new position's row is numbered up to this many prefix tokens
SELF_PLOT_PX = 380  # the look-ahead heatmap's plot area in half of the page at 1366 px (after its labels)
GOLD_COLOUR = "#d62728"
CHOSEN_COLOUR = "#1f77b4"
OTHER_COLOUR = "#9ecae1"
LIGHT_GREENS = browser_scale([[0.0, "#f7fcf5"], [1.0, "#74c476"]])  # light enough for dark (#111) numbers on every cell
UNIFORM_TEXT = dict(minsize=16, mode="show")  # plotly would otherwise shrink bar labels below 16 px
MARGIN = dict(l=20, r=20, t=70, b=20)


def _height(rows: int, per_row: int = 44, base: int = 200) -> int:
    return min(900, base + per_row * rows)


def cross_attention_heatmap(
    weights: np.ndarray,
    source: Sequence[str],
    produced: Sequence[str],
    alignment: Sequence[int | None] | None = None,
    layer: int = 1,
    head: int = 1,
    score: float | None = None,
    lang: str = "en",
) -> go.Figure:
    """weights (T_t, T_s): row j is the cross-attention while producing ``produced[j]``;
    ``alignment[j]`` the gold source position of that token (drawn as a red square)."""
    rows, cols = token_labels(list(produced)), token_labels(list(source))
    hover = translate("translate.fig_cross_hover", lang)
    fig = go.Figure(
        go.Heatmap(z=weights, x=cols, y=rows, zmin=0, zmax=1, colorscale=SEQUENTIAL, hovertemplate=hover,
                   colorbar=dict(title=dict(text=translate("translate.fig_weight", lang))))
    )  # fmt: skip
    gold = [(cols[a], rows[j]) for j, a in enumerate(alignment or []) if a is not None and j < len(rows)]
    if gold:
        fig.add_trace(
            go.Scatter(x=[g[0] for g in gold], y=[g[1] for g in gold], mode="markers", name=translate("translate.fig_gold", lang),
                       marker=dict(symbol="square-open", size=30, color=GOLD_COLOUR, line=dict(width=3)),
                       hoverinfo="skip")
        )  # fmt: skip
    key = (
        "translate.fig_cross_title_score" if score is not None and not np.isnan(score) else "translate.fig_cross_title"
    )
    title = translate(key, lang, layer=layer, head=head, score=score if score is not None else 0.0)
    fig.update_layout(
        projector_layout(title, _height(len(rows)), "translate-cross", 20, MARGIN,
                         xaxis=axis_style(translate("translate.fig_source_axis", lang), side="bottom",
                                          tickmode="array", tickvals=cols),
                         # every row labelled: plotly skips every second one when the font grows (presenter)
                         yaxis=axis_style(translate("translate.fig_target_axis", lang), autorange="reversed",
                                          tickmode="array", tickvals=rows),
                         legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    )  # fmt: skip
    return legible(fig)


def head_scores_heatmap(scores: np.ndarray, lang: str = "en") -> go.Figure:
    """scores (L, H): each head's alignment accuracy on this sentence, with the value in each cell."""
    layers, heads = scores.shape
    x = [translate("translate.fig_head", lang, n=h + 1) for h in range(heads)]
    y = [translate("translate.fig_layer", lang, n=i + 1) for i in range(layers)]
    text = [["—" if np.isnan(v) else f"{v:.0%}" for v in row] for row in scores]
    fig = go.Figure(
        go.Heatmap(z=np.nan_to_num(scores, nan=0.0), x=x, y=y, zmin=0, zmax=1, colorscale=LIGHT_GREENS, text=text,
                   texttemplate="%{text}", textfont=dict(size=18, color=TEXT_COLOUR), showscale=False,
                   hovertemplate="%{y}, %{x}: %{text}<extra></extra>")
    )  # fmt: skip
    fig.update_layout(
        projector_layout(translate("translate.fig_scores_title", lang), 150 + 60 * layers, "translate-head-scores",
                         20, MARGIN, xaxis=axis_style(None, side="top"), yaxis=axis_style(None, autorange="reversed"))
    )  # fmt: skip
    return legible(fig)


def row_numbers(row: np.ndarray, plot_px: float = SELF_PLOT_PX, font_px: int = 16) -> list[str]:
    """The outlined row's weights as cell labels that do not run into each other: "0.05" when four
    characters fit a cell of ``plot_px`` / len(row) pixels, else ".05", else the three largest with an
    empty cell on each side (a label may then spill into its blank neighbours)."""
    cell = plot_px / max(len(row), 1)
    for chars, fmt in ((4, lambda v: f"{v:.2f}"), (3, lambda v: f"{v:.2f}".removeprefix("0"))):
        if chars * CHAR_WIDTH * font_px + 8 <= cell:
            return [fmt(float(v)) for v in row]
    chosen: list[int] = []
    for i in np.argsort(-row).tolist():
        if len(chosen) < 3 and all(abs(i - j) > 1 for j in chosen):
            chosen.append(i)
    return [f"{float(v):.2f}".removeprefix("0") if i in chosen else "" for i, v in enumerate(row)]


def look_ahead_heatmap(matrix: np.ndarray, prefix: Sequence[str], lang: str = "en") -> go.Figure:
    """matrix (t+1, t+1): decoder self-attention over the prefix; cells above the diagonal are
    masked (grey, "masked"); the last row is the new position's row (outlined)."""
    n = matrix.shape[0]
    labels = token_labels(list(prefix))
    masked = np.triu(np.ones((n, n), dtype=bool), k=1)
    z = np.where(masked, np.nan, matrix)
    # numbers on the new position's row only: a whole matrix of them does not fit at 16 px
    text = np.full((n, n), "", dtype=object)
    if n <= MAX_NUMBERED:
        text[-1] = row_numbers(matrix[-1])
    fig = go.Figure(
        go.Heatmap(z=z, x=labels, y=labels, zmin=0, zmax=1, colorscale=SEQUENTIAL, text=text, texttemplate="%{text}",
                   textfont=dict(size=16), hoverongaps=False, showscale=False,
                   hovertemplate=translate("translate.fig_self_hover", lang))
    )  # fmt: skip
    shapes = [dict(type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5, fillcolor=MASKED_COLOUR,
                   line=dict(width=0), layer="below") for i in range(n) for j in range(i + 1, n)]  # fmt: skip
    shapes.append(dict(type="rect", x0=-0.5, x1=n - 0.5, y0=n - 1.5, y1=n - 0.5, line=dict(color=GOLD_COLOUR, width=3)))
    note = dict(text=translate("translate.fig_masked", lang), x=1, y=1, xref="paper", yref="paper", xanchor="right",
                yanchor="bottom", showarrow=False, bgcolor=MASKED_COLOUR)  # fmt: skip
    fig.update_layout(
        projector_layout(translate("translate.fig_self_title", lang), _height(n, 50, 220), "translate-self", 20,
                         MARGIN, shapes=shapes, annotations=[note], plot_bgcolor=MASKED_COLOUR,
                         xaxis=axis_style(translate("translate.fig_key_axis", lang), side="bottom"),
                         yaxis=axis_style(translate("translate.fig_query_axis", lang), autorange="reversed"))
    )  # fmt: skip
    return legible(fig)


def cross_row_bars(row: np.ndarray, source: Sequence[str], gold: int | None = None, lang: str = "en") -> go.Figure:
    """row (T_s,): the new position's cross-attention over the source; the gold word in red."""
    labels = token_labels(list(source))
    colours = [GOLD_COLOUR if i == gold else CHOSEN_COLOUR for i in range(len(labels))]
    fig = go.Figure(
        go.Bar(x=labels, y=row, marker_color=colours, text=[f"{v:.2f}" if v >= 0.05 else "" for v in row],
               textposition="outside", textfont=dict(size=16, color=TEXT_COLOUR), cliponaxis=False,
               hovertemplate="%{x}: %{y:.3f}<extra></extra>")
    )  # fmt: skip
    fig.update_layout(
        projector_layout(translate("translate.fig_cross_row_title", lang), 380, "translate-cross-row", 20, MARGIN, uniformtext=UNIFORM_TEXT,
                         xaxis=axis_style(None),  # the labels are the source words; a title would overlap them
                         yaxis=axis_style(translate("translate.fig_weight", lang), range=[0, 1.15]))
    )  # fmt: skip
    return legible(fig)


def top_k_bars(probs: np.ndarray, tokens: Sequence[str], chosen: int, k: int = 8, lang: str = "en") -> go.Figure:
    """probs (V,): the k most likely next tokens, the appended one (``chosen`` id) darker."""
    order = np.argsort(-probs)[:k]
    labels = [escape(tokens[i]) for i in order]
    colours = [CHOSEN_COLOUR if i == chosen else OTHER_COLOUR for i in order]
    fig = go.Figure(
        go.Bar(x=probs[order], y=labels, orientation="h", marker_color=colours, text=[f"{probs[i]:.1%}" for i in order],
               textposition="outside", textfont=dict(size=16, color=TEXT_COLOUR), cliponaxis=False,
               hovertemplate="%{y}: %{x:.2%}<extra></extra>")
    )  # fmt: skip
    fig.update_layout(
        projector_layout(translate("translate.fig_topk_title", lang, k=len(order)), 120 + 44 * len(order),
                         "translate-topk", 20, MARGIN, uniformtext=UNIFORM_TEXT,
                         xaxis=axis_style(translate("translate.fig_probability", lang), range=[0, 1.4], tickformat=".0%"),
                         yaxis=axis_style(None, autorange="reversed"))
    )  # fmt: skip
    return legible(fig)
