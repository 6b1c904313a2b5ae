"""Figures of the head atlas: pure functions (numpy in, plotly Figure out).

Every figure sets its fonts explicitly (at least 16 px, #111) through ``legible``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import CHAR_WIDTH, FONT_SIZE, SEQUENTIAL, axis_style, legible, projector_layout, token_labels

# light tints: the role name and score are written in dark text on every cell
ROLE_COLOURS = {
    "previous": "#9ecae1",
    "next": "#a1d99b",
    "diagonal": "#c5b0d5",
    "sink": "#c7c7c7",
    "punctuation": "#dbc4bd",
    "induction": "#ff9896",
    "alignment": "#98df8a",
    "locality": "#9edae5",
    "broad": "#ffbb78",
    "mixed": "#f4f4f4",
}
ROLE_ORDER = tuple(ROLE_COLOURS)
MARGIN = dict(l=20, r=20, t=70, b=20)
WIDE_MARGIN = dict(MARGIN, t=120)  # the title above the head numbers and their axis title
GRID_WIDTH_PX = 760  # the grid's plot area on a 1366-pixel screen with the sidebar open
# short role names for cells too narrow for the full ones (12 heads a layer: ~60 px a cell)
SHORT_NAMES = {
    "previous": "atlas.short_previous",
    "next": "atlas.short_next",
    "diagonal": "atlas.short_diagonal",
    "sink": "atlas.short_sink",
    "punctuation": "atlas.short_punctuation",
    "induction": "atlas.short_induction",
    "alignment": "atlas.short_alignment",
    "locality": "atlas.short_locality",
    "broad": "atlas.short_broad",
    "mixed": "atlas.short_mixed",
}


def _discrete_scale() -> list[list]:
    """A colour scale on [0, len(ROLE_ORDER)] (normalised) that gives z in [i, i + 1) the colour of ROLE_ORDER[i]."""
    n = len(ROLE_ORDER)
    scale = []
    for i, role in enumerate(ROLE_ORDER):
        scale += [[i / n, ROLE_COLOURS[role]], [(i + 1) / n, ROLE_COLOURS[role]]]
    return scale


def role_grid(
    roles: np.ndarray, strength: np.ndarray, scores: dict[str, np.ndarray], names: dict[str, str], lang: str = "en",
    first_layer: int = 0,
) -> go.Figure:  # fmt: skip
    """A layer x head grid coloured by each head's role (``roles`` (L, H) of ROLE_ORDER names), the role
    and its score written in the cell (short role names and numbered columns when the full names would not
    fit a cell, as with 12 heads); hovering shows the full role name and every score. ``names``: role and
    score -> shown name. ``first_layer`` (0-based): the first row's layer, when a page shows some layers."""
    n_layers, n_heads = roles.shape
    z = np.vectorize(ROLE_ORDER.index)(roles).astype(float) + 0.5  # the middle of the role's colour band
    cell_px = GRID_WIDTH_PX / max(n_heads, 1)
    narrow = max(len(names[r]) for r in set(roles.ravel())) * CHAR_WIDTH * FONT_SIZE > cell_px - 6
    shown = {r: translate(SHORT_NAMES[r], lang) for r in SHORT_NAMES} if narrow else names
    text = np.empty(roles.shape, dtype=object)
    hover = np.empty(roles.shape, dtype=object)
    for layer in range(n_layers):
        for head in range(n_heads):
            role = roles[layer, head]
            value = "" if role == "mixed" else f"<br>{strength[layer, head]:.2f}"
            text[layer, head] = shown[role] + value
            lines = [names[role]]
            lines += [f"{names[k]}: {v[layer, head]:.2f}" for k, v in scores.items() if np.isfinite(v[layer, head])]
            hover[layer, head] = "<br>".join(lines)
    x = [translate("atlas.fig_head", lang, head=h + 1) for h in range(n_heads)]
    y = [translate("atlas.fig_layer", lang, layer=first_layer + i + 1) for i in range(n_layers)]
    cells_x = [x[h] for _ in range(n_layers) for h in range(n_heads)]
    cells_y = [y[i] for i in range(n_layers) for _ in range(n_heads)]
    fig = go.Figure(
        [
            go.Heatmap(z=z, x=x, y=y, zmin=0, zmax=len(ROLE_ORDER), colorscale=_discrete_scale(), showscale=False,
                       text=text, texttemplate="%{text}", textfont=dict(size=16), xgap=3, ygap=3, hoverinfo="skip"),
            # a heatmap cell is not a selectable point: a transparent square marker on each cell takes the click
            go.Scatter(x=cells_x, y=cells_y, mode="markers", customdata=hover.ravel().tolist(), showlegend=False,
                       marker=dict(symbol="square", size=60, color="rgba(0,0,0,0)"),
                       hovertemplate="%{y}, %{x}<br>%{customdata}<extra></extra>"),
        ]
    )  # fmt: skip
    xaxis = axis_style(None, side="top")
    if narrow:  # many heads: numbered columns ("Head" once, as the axis title) keep their labels level
        numbers = [str(h + 1) for h in range(n_heads)]
        xaxis = axis_style(translate("atlas.fig_head_axis", lang), side="top", tickvals=x, ticktext=numbers)
    fig.update_layout(
        projector_layout(translate("atlas.fig_grid_title", lang), min(900, 170 + 78 * n_layers), "atlas-grid", 20,
                         WIDE_MARGIN if narrow else MARGIN, xaxis=xaxis, yaxis=axis_style(None, autorange="reversed"),
                         clickmode="event+select")
    )  # fmt: skip
    if narrow:  # the title at the very top, clear of the axis title under it
        fig.update_layout(title=dict(yref="container", y=0.98, yanchor="top"))
    return legible(fig)


def head_heatmap(
    weights: np.ndarray, queries: Sequence[str], keys: Sequence[str], title: str, causal: bool, lang: str = "en"
) -> go.Figure:
    """weights (T_q, T_k) of one head; with ``causal`` the cells above the diagonal (blocked) are grey."""
    t_q, t_k = weights.shape
    z = np.asarray(weights, dtype=float)
    if causal:
        z = np.where(np.triu(np.ones((t_q, t_k), dtype=bool), k=1), np.nan, z)
    fig = go.Figure(
        go.Heatmap(z=z, x=token_labels(list(keys)), y=token_labels(list(queries)), zmin=0, zmax=1,
                   colorscale=SEQUENTIAL, hoverongaps=False, colorbar=dict(thickness=14),
                   hovertemplate=translate("atlas.fig_cell_hover", lang))
    )  # fmt: skip
    fig.update_layout(
        projector_layout(title, min(900, 220 + 24 * t_q), "atlas-head", 20, MARGIN,
                         plot_bgcolor="#c8c8c8" if causal else "white",
                         xaxis=axis_style(translate("atlas.fig_key_axis", lang)),
                         yaxis=axis_style(translate("atlas.fig_query_axis", lang), autorange="reversed"))
    )  # fmt: skip
    return legible(fig)
