"""Figures of the Residual page: pure functions (numpy in, plotly Figure out), every font explicit.

``lens_heatmap`` reading × position with each reading's top token; ``answer_curve`` the final
answer's probability and rank per reading; ``contribution_waterfall`` the parts adding up to a
logit; ``head_heatmap`` one number per layer and head, clickable; ``head_space_scatter`` the
queries and keys of a layer's heads in 2-D; ``prediction_bars`` a classifier's probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import (
    DIVERGING,
    FONT_SIZE,
    SEQUENTIAL,
    axis_style,
    escape,
    font,
    legible,
    plain_figure,
    projector_layout,
    tick_angle,
    token_labels,
)

MARGIN = dict(l=20, r=20, t=70, b=20)
HEAD_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173", "#3182bd", "#e6550d"]  # fmt: skip
KIND_COLOURS = {"word": "#1f77b4", "punctuation": "#d62728", "number": "#2ca02c", "special": "#7f7f7f"}
LENS_WIDTH_PX = 1100


DEEP_ROW_PX = 30  # a row of a 30-layer model's figure: one line of 16 px text and its gap


def row_px(rows: int, shallow: int = 48) -> int:
    """Pixels a figure row gets: ``shallow`` for up to 13 rows, fewer for a deep model (31 readings of
    SmolLM2 at 48 px would be 1,660 px tall)."""
    return shallow if rows <= 13 else DEEP_ROW_PX


def reading_names(readings: int, lang: str = "en") -> list[str]:
    """'embedding', 'layer 1', …: the rows of the lens."""
    return [translate("residual.fig_embedding", lang)] + [
        translate("residual.fig_layer", lang, layer=i) for i in range(1, readings)
    ]


def lens_heatmap(
    top_tokens: Sequence[Sequence[str]], top_probs: np.ndarray, positions: Sequence[str], lang: str = "en"
) -> go.Figure:
    """top_tokens (R, T, k) texts and top_probs (R, T, k): each cell shows the likeliest token of that
    reading at that position, coloured by its probability; hover lists the k likeliest."""
    probs = np.asarray(top_probs, dtype=np.float32)
    rows, length = probs.shape[:2]
    names = reading_names(rows, lang)
    x = token_labels(list(positions))
    cells = [[escape(top_tokens[r][t][0]) for t in range(length)] for r in range(rows)]
    hover = [
        ["<br>".join(f"{escape(tok)}: {p:.1%}" for tok, p in zip(top_tokens[r][t], probs[r, t])) for t in range(length)]
        for r in range(rows)
    ]
    heat = dict(
        type="heatmap", z=probs[:, :, 0], x=x, y=names, zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL,
        text=cells, texttemplate="%{text}" if length <= 40 else None, textfont=dict(size=FONT_SIZE),
        customdata=hover, hovertemplate="%{y} · %{x}<br>%{customdata}<extra></extra>",
        colorbar=dict(title=dict(text=translate("residual.fig_probability", lang), font=font()), tickfont=font(),
                      thickness=16, tickformat=".0%"),
    )  # fmt: skip
    layout = projector_layout(
        translate("residual.fig_lens_title", lang), 170 + row_px(rows) * rows, "residual-lens", FONT_SIZE + 4, MARGIN,
        xaxis=axis_style(translate("residual.fig_after", lang), type="category",
                         tickangle=tick_angle(x, LENS_WIDTH_PX), automargin=True),
        yaxis=axis_style(None, type="category", autorange="reversed", automargin=True),
    )  # fmt: skip
    return plain_figure([heat], layout)


def answer_curve(probs: np.ndarray, ranks: np.ndarray, answer: str, lang: str = "en") -> go.Figure:
    """The final answer's probability (bars) at each reading, its rank written on each bar."""
    names = reading_names(len(probs), lang)
    labels = [translate("residual.fig_rank", lang, rank=int(r) + 1, p=float(p)) for p, r in zip(probs, ranks)]
    bar = dict(type="bar", x=names, y=np.asarray(probs, dtype=float), text=labels, textposition="outside",
               cliponaxis=False, marker=dict(color="#1f77b4"), hovertemplate="%{x}: %{y:.2%}<extra></extra>")  # fmt: skip
    layout = projector_layout(
        translate("residual.fig_answer_title", lang, token=escape(answer)), 380, "residual-answer", FONT_SIZE + 4,
        MARGIN, yaxis=axis_style(translate("residual.fig_probability", lang), range=[0, 1.18], tickformat=".0%"),
        xaxis=axis_style(None, type="category"),
    )  # fmt: skip
    return plain_figure([bar], layout)


def contribution_waterfall(
    labels: Sequence[str], values: np.ndarray, logit: float, token: str, lang: str = "en"
) -> go.Figure:
    """The parts (in order) as steps of a waterfall that ends at their sum, the model's ``logit``."""
    values = np.asarray(values, dtype=float)
    fig = go.Figure(
        go.Waterfall(
            x=[*labels, translate("residual.fig_total", lang)], y=[*values, 0.0],
            measure=["relative"] * len(values) + ["total"], text=[f"{v:+.2f}" for v in values] + [f"{logit:.2f}"],
            textposition="outside", cliponaxis=False, connector=dict(line=dict(color="#9CA3AF")),
            increasing=dict(marker=dict(color="#2166ac")), decreasing=dict(marker=dict(color="#b2182b")),
            totals=dict(marker=dict(color="#111111")), hovertemplate="%{x}: %{y:+.3f}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        projector_layout(
            translate("residual.fig_waterfall_title", lang, token=escape(token), logit=logit), 440,
            "residual-waterfall", FONT_SIZE + 4, MARGIN,
            yaxis=axis_style(translate("residual.fig_logit", lang)), xaxis=axis_style(None, type="category"),
        )
    )  # fmt: skip
    return legible(fig)


def head_heatmap(
    values: np.ndarray, title: str, value_name: str, selected: tuple[int, int] | None = None, lang: str = "en",
    meta: str = "residual-heads",
) -> go.Figure:  # fmt: skip
    """values (L, H): one number per head on a diverging scale centred on 0, written in each cell;
    ``customdata`` [layer, head] (0-based) says which head a click chose; ``selected`` is outlined."""
    v = np.asarray(values, dtype=float)
    layers, heads = v.shape
    top = max(float(np.abs(v).max(initial=0.0)), 1e-6)
    custom = [[[i, h] for h in range(heads)] for i in range(layers)]
    heat = dict(
        type="heatmap", z=v, x=[translate("residual.fig_head", lang, head=h + 1) for h in range(heads)],
        y=[translate("residual.fig_layer", lang, layer=i + 1) for i in range(layers)], zmin=-top, zmax=top,
        colorscale=DIVERGING, customdata=custom, text=[[f"{x:+.2f}" for x in row] for row in v],
        texttemplate="%{text}" if heads <= 16 else None, textfont=dict(size=FONT_SIZE),
        hoverinfo="skip", colorbar=dict(title=dict(text=value_name, font=font()), tickfont=font(), thickness=16),
    )  # fmt: skip
    # a heatmap cell sends no selection event: a transparent marker over each cell is what a click hits
    xs, ys = heat["x"], heat["y"]
    overlay = dict(
        type="scatter", mode="markers", x=[xs[h] for i in range(layers) for h in range(heads)],
        y=[ys[i] for i in range(layers) for h in range(heads)], customdata=[c for row in custom for c in row],
        marker=dict(size=min(40, int(900 / max(heads, 1))), symbol="square", color="rgba(0,0,0,0)"),
        text=[f"{ys[i]} · {xs[h]}<br>{escape(value_name)} {v[i, h]:+.3f}" for i in range(layers) for h in range(heads)],
        hovertemplate="%{text}<extra></extra>", showlegend=False, name="open",
    )  # fmt: skip
    shapes = []
    if selected is not None:
        layer, head = selected
        shapes.append(dict(type="rect", xref="x", yref="y", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5,
                           y1=layer + 0.5, line=dict(color="#111111", width=3)))  # fmt: skip
    layout = projector_layout(
        title, 150 + row_px(layers, 44) * layers, meta, FONT_SIZE + 4, MARGIN, clickmode="event+select", dragmode=False,
        shapes=shapes, xaxis=axis_style(None, type="category", side="top"),
        yaxis=axis_style(None, type="category", autorange="reversed"),
    )  # fmt: skip
    return plain_figure([heat, overlay], layout)


def clicked_cell(selection: dict | None) -> tuple[int, ...] | None:
    """The ``customdata`` of the point clicked in a figure (``st.plotly_chart(on_select=...)``), as ints."""
    points = ((selection or {}).get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and custom:
            return tuple(int(c) for c in custom[:4])
    return None


def head_space_scatter(
    xy: np.ndarray, groups: np.ndarray, roles: np.ndarray, custom: np.ndarray, hover: Sequence[str],
    group_names: dict, explained: np.ndarray, lang: str = "en",
) -> go.Figure:  # fmt: skip
    """Points (N, 2), one trace per group (a head, or a token kind) and role (queries ●, keys ✕);
    ``custom`` (N, 4) [sentence, position, head, is_key] comes back on a click."""
    traces = []
    for g, name in group_names.items():
        for role, symbol in (("query", "circle"), ("key", "x")):
            pick = (groups == g) & (roles == role)
            if not pick.any():
                continue
            colour = KIND_COLOURS.get(g) if isinstance(g, str) else HEAD_COLOURS[int(g) % len(HEAD_COLOURS)]
            role_name = translate(f"residual.fig_{role}", lang)
            traces.append(dict(
                type="scattergl", mode="markers", x=xy[pick, 0], y=xy[pick, 1], name=f"{name} · {role_name}",
                marker=dict(size=7, symbol=symbol, color=colour, opacity=0.75), customdata=custom[pick],
                text=[hover[i] for i in np.flatnonzero(pick)], hovertemplate="%{text}<extra></extra>",
            ))  # fmt: skip
    first, second = (float(e) for e in explained[:2])
    layout = projector_layout(
        translate("residual.fig_space_title", lang), 620, "residual-space", FONT_SIZE + 4, MARGIN,
        clickmode="event+select", dragmode="zoom",
        xaxis=axis_style(translate("residual.fig_pc", lang, n=1, share=first)),
        yaxis=axis_style(translate("residual.fig_pc", lang, n=2, share=second)),
        legend=dict(font=font(), orientation="v"),
    )  # fmt: skip
    return plain_figure(traces, layout)


def row_bars(weights: np.ndarray, tokens: Sequence[str], title: str, lang: str = "en") -> go.Figure:
    """One attention row (T_k,) as bars over the key tokens."""
    x = token_labels(list(tokens))
    bar = dict(type="bar", x=x, y=np.asarray(weights, dtype=float), marker=dict(color="#1f77b4"),
               hovertemplate="%{x}: %{y:.3f}<extra></extra>")  # fmt: skip
    layout = projector_layout(
        title, 340, "residual-row", FONT_SIZE + 2, MARGIN,
        xaxis=axis_style(None, type="category", tickangle=tick_angle(x, 700)),
        yaxis=axis_style(translate("residual.fig_weight", lang), range=[0, 1]),
    )  # fmt: skip
    return plain_figure([bar], layout)


def prediction_bars(labels: Sequence[str], probs: np.ndarray, title: str, meta: str, lang: str = "en") -> go.Figure:
    """A model's probability per label (horizontal bars)."""
    p = np.asarray(probs, dtype=float)
    bar = dict(type="bar", orientation="h", x=p, y=[escape(str(label)) for label in labels],
               text=[f"{v:.1%}" for v in p], textposition="outside", cliponaxis=False,
               marker=dict(color="#1f77b4"), hovertemplate="%{y}: %{x:.2%}<extra></extra>")  # fmt: skip
    layout = projector_layout(
        title, 150 + 40 * len(p), meta, FONT_SIZE + 2, MARGIN,
        xaxis=axis_style(translate("residual.fig_probability", lang), range=[0, 1.25], tickformat=".0%"),
        yaxis=axis_style(None, type="category", autorange="reversed"),
    )  # fmt: skip
    return plain_figure([bar], layout)
