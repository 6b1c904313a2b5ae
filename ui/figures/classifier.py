"""Figures for the Classifier page: tokens as coloured chips, attribution bars, head switch-off.

Tokens are drawn as text on a heat strip (plotly escapes nothing by itself, so every token
goes through ``escape``); signed scores use a diverging scale centred on 0 (blue: towards the
explained class, red: away from it), unsigned ones a sequential scale.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ..i18n import class_name_in, translate
from .common import DIVERGING, FONT_SIZE, SEQUENTIAL, escape, legible, plain_figure, text_width, token_labels

POSITIVE_COLOUR = "#2166ac"
NEGATIVE_COLOUR = "#b2182b"
ROW_HEIGHT = 44
MAX_CHIP_CHARS = 14
COMPARE_CHARS = 72  # average Latin characters across an aligned strip at 1366 px (row names take the rest)
MIN_STRIP_LINES = 2  # a one-line strip is drawn two lines tall: room for three colour-bar numbers


def _chip(token: str) -> str:
    """Escaped token text, shortened so a long word does not spill over its neighbours."""
    short = token if len(token) <= MAX_CHIP_CHARS else token[: MAX_CHIP_CHARS - 1] + "…"
    return escape(short)


def _colour_range(values: np.ndarray, signed: bool) -> dict:
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    if signed:
        return {"zmin": -top, "zmax": top, "zmid": 0.0, "colorscale": DIVERGING}
    return {"zmin": 0.0, "zmax": top, "colorscale": SEQUENTIAL}


def _wrap(values: list, per_row: int, fill) -> list[list]:
    rows = max(1, math.ceil(len(values) / per_row))
    padded = list(values) + [fill] * (rows * per_row - len(values))
    return [padded[r * per_row : (r + 1) * per_row] for r in range(rows)]


def _strip_layout(fig: go.Figure, title: str, rows: int, row_labels: list[str] | None = None) -> go.Figure:
    fig.update_layout(
        title={"text": escape(title), "font": {"size": FONT_SIZE + 2}},
        font={"size": FONT_SIZE},
        height=90 + ROW_HEIGHT * rows,
        margin={"l": 10 if row_labels is None else 60, "r": 10, "t": 50, "b": 10},
        xaxis={"visible": False},
        yaxis={
            "autorange": "reversed",
            "visible": row_labels is not None,
            "tickmode": "array",
            "tickvals": list(range(rows)),
            "ticktext": row_labels or [],
        },
        plot_bgcolor="white",
    )
    return legible(fig)


def _text_colour(rgb: str) -> str:
    """Black on light chips, white on dark ones ('rgb(r, g, b)' in)."""
    r, g, b = (float(v) for v in rgb[rgb.index("(") + 1 : -1].split(","))
    return "#111" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#fff"


def _chip_positions(chips: list[str], line_chars: int) -> list[tuple[float, float, int]]:
    """(x0, x1, line) of each chip in character units, wrapping like words in a paragraph."""
    out, x, line = [], 0.0, 0
    for chip in chips:
        width = max(text_width(chip), 1) + 1.6
        if x > 0 and x + width > line_chars:
            line, x = line + 1, 0.0
        out.append((x, x + width, line))
        x += width + 0.5
    return out


def _bar_ticks(scale: dict) -> dict:
    """Three colour-bar numbers (ends and middle): five ran into one another on a one-line strip."""
    values = np.linspace(scale["zmin"], scale["zmax"], 3)
    return {"tickvals": values.tolist(), "ticktext": [f"{v:.2g}" for v in values]}


def token_strip(
    tokens: list[str], scores: np.ndarray, title: str, signed: bool = True, line_chars: int = 40
) -> go.Figure:
    """Tokens (n,) as coloured chips laid out like text (lines of about ``line_chars`` characters),
    coloured by ``scores`` (n,); hover shows position, token and value."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(tokens) != len(scores):
        raise ValueError(f"Got {len(tokens)} tokens but {len(scores)} scores.")
    chips = [_chip(t) for t in tokens]
    places = _chip_positions([t if len(t) <= MAX_CHIP_CHARS else t[:MAX_CHIP_CHARS] for t in tokens], line_chars)
    scale = _colour_range(scores, signed)
    span = scale["zmax"] - scale["zmin"]
    fills = sample_colorscale(scale["colorscale"], list(np.clip((scores - scale["zmin"]) / span, 0, 1)))
    shapes = [
        {
            "type": "rect",
            "x0": x0,
            "x1": x1,
            "y0": line + 0.1,
            "y1": line + 0.9,
            "fillcolor": fill,
            "line": {"width": 1, "color": "#bbb"},
            "layer": "below",
        }
        for (x0, x1, line), fill in zip(places, fills)
    ]
    hover = [f"{label}<br>{value:.4f}" for label, value in zip(token_labels(tokens), scores)]
    fig = go.Figure(
        go.Scatter(
            x=[(x0 + x1) / 2 for x0, x1, _ in places],
            y=[line + 0.5 for _, _, line in places],
            mode="text",
            text=chips,
            textfont={"size": FONT_SIZE, "color": [_text_colour(f) for f in fills]},
            hovertext=hover,
            hoverinfo="text",
        )
    )
    fig.add_trace(
        go.Scatter(  # an invisible marker only to draw the colour bar
            x=[None],
            y=[None],
            mode="markers",
            hoverinfo="skip",
            marker={
                "colorscale": scale["colorscale"],
                "cmin": scale["zmin"],
                "cmax": scale["zmax"],
                "color": [0.0],
                "showscale": True,
                "colorbar": {"thickness": 12, "len": 0.9, **_bar_ticks(scale)},
            },
        )
    )
    lines = max((places[-1][2] + 1) if places else 1, MIN_STRIP_LINES)
    fig.update_layout(
        title={"text": escape(title), "font": {"size": FONT_SIZE + 2}},
        height=70 + 40 * lines,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        xaxis={"visible": False, "range": [-0.3, line_chars + 0.3], "fixedrange": True},
        yaxis={"visible": False, "range": [lines, 0], "fixedrange": True},
        shapes=shapes,
        showlegend=False,
        plot_bgcolor="white",
    )
    return legible(fig)


def attribution_bars(tokens: list[str], scores: np.ndarray, title: str, signed: bool = True) -> go.Figure:
    """One bar per token (labels '3:the'); signed scores are blue above 0 and red below."""
    scores = np.asarray(scores, dtype=np.float64)
    colours = [POSITIVE_COLOUR if s >= 0 else NEGATIVE_COLOUR for s in scores] if signed else POSITIVE_COLOUR
    fig = go.Figure(
        go.Bar(x=token_labels(tokens), y=scores, marker_color=colours, hovertemplate="%{x}<br>%{y:.4f}<extra></extra>")
    )
    fig.update_layout(
        title={"text": escape(title), "font": {"size": FONT_SIZE}},
        font={"size": FONT_SIZE - 2},
        height=320,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        xaxis={"tickangle": -60, "automargin": True, "type": "category"},
        yaxis={"zeroline": True, "zerolinecolor": "#444", "automargin": True},
        plot_bgcolor="white",
    )
    return legible(fig)


def columns_for(chips: list[str], line_chars: int = COMPARE_CHARS) -> int:
    """Columns of an aligned strip whose cells hold the widest chip (a 12-column strip cut
    "재미있었다" and "wonderful" at the cell's edges): 3 to 12."""
    widest = max((text_width(c) for c in chips), default=1.0)
    return int(min(12, max(3, line_chars // (widest + 1.5))))


def comparison_strips(
    tokens_a: list[str],
    tokens_b: list[str],
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    title: str,
    names: tuple[str, str] = ("A", "B"),
    per_row: int | None = None,
) -> go.Figure:
    """Two aligned sentences as pairs of chip rows (gaps: empty cells), ``per_row`` columns to a block
    (default: as many as fit the widest token, :func:`columns_for`)."""
    if not len(tokens_a) == len(tokens_b) == len(scores_a) == len(scores_b):
        raise ValueError("Aligned rows must have one token and one score per column.")
    per_row = per_row or columns_for([_chip(t) for t in [*tokens_a, *tokens_b]])
    za, zb = _wrap(list(scores_a), per_row, np.nan), _wrap(list(scores_b), per_row, np.nan)
    ta, tb = _wrap([_chip(t) for t in tokens_a], per_row, ""), _wrap([_chip(t) for t in tokens_b], per_row, "")
    blank = [np.nan] * per_row
    z, text, labels = [], [], []
    for block in range(len(za)):
        z += [za[block], zb[block], blank]
        text += [ta[block], tb[block], [""] * per_row]
        labels += [escape(names[0]), escape(names[1]), ""]
    z_arr = np.array(z[:-1], dtype=np.float64)  # no spacer after the last block
    both = np.concatenate([np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)])
    fig = go.Figure(
        go.Heatmap(
            z=z_arr,
            text=text[:-1],
            texttemplate="%{text}",
            textfont={"size": FONT_SIZE},
            hovertemplate="%{text}<br>%{z:.4f}<extra></extra>",
            xgap=3,
            ygap=3,
            hoverongaps=False,
            colorbar={"thickness": 12, "len": 0.9},
            **_colour_range(both, True),
        )
    )
    return _strip_layout(fig, title, z_arr.shape[0], labels[:-1])


def head_effect_heatmap(heads: np.ndarray, layers: np.ndarray, base: float, label: str, lang: str = "en") -> go.Figure:
    """Change of p(label) when one head (columns 1..H) or a whole layer (last column) is switched
    off: heads (L, H), layers (L,), base p with every head on. Rows are layers, 1-based."""
    change = np.column_stack([heads, layers]) - base  # (L, H + 1)
    num_layers, num_heads = heads.shape
    x = [translate("classifier.fig_head", lang, head=h + 1) for h in range(num_heads)]
    x.append(translate("classifier.fig_whole_layer", lang))
    y = [translate("classifier.fig_layer", lang, layer=lay + 1) for lay in range(num_layers)]
    top = float(np.abs(change).max()) or 1.0
    hover = translate("classifier.fig_effect_hover", lang, row="%{y}", col="%{x}", z="%{z:+.4f}")
    title = translate("classifier.fig_effect_title", lang, label=label, base=f"{base:.3f}")
    fig = go.Figure(
        go.Heatmap(
            z=change,
            x=x,
            y=y,
            colorscale=DIVERGING,
            zmid=0.0,
            zmin=-top,
            zmax=top,
            xgap=2,
            ygap=2,
            texttemplate="%{z:+.3f}",
            textfont={"size": FONT_SIZE - 2},
            hovertemplate=hover + "<extra></extra>",
            colorbar={"title": {"text": "Δp"}, "thickness": 12},
        )
    )
    fig.update_layout(
        title={"text": escape(title), "font": {"size": FONT_SIZE}},
        font={"size": FONT_SIZE - 2},
        height=140 + 46 * num_layers,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"automargin": True},
    )
    return legible(fig)


def ranking_bars(names: list[str], changes: np.ndarray, label: str, k: int = 10, lang: str = "en") -> go.Figure:
    """The first ``k`` (already ranked) switch-offs as horizontal bars of the change of p(label)."""
    names, changes = list(names)[:k], np.asarray(changes, dtype=np.float64)[:k]
    colours = [POSITIVE_COLOUR if c >= 0 else NEGATIVE_COLOUR for c in changes]
    fig = go.Figure(
        go.Bar(
            y=[escape(n) for n in names],
            x=changes,
            orientation="h",
            marker_color=colours,
            texttemplate="%{x:+.3f}",
            textposition="outside",
            hovertemplate="%{y}<br>"
            + translate("classifier.fig_change_hover", lang, x="%{x:+.4f}")
            + "<extra></extra>",
        )
    )
    top = float(np.abs(changes).max()) if len(changes) else 1.0
    fig.update_layout(
        title={
            "text": escape(translate("classifier.fig_ranking_title", lang, label=label)),
            "font": {"size": FONT_SIZE},
        },
        font={"size": FONT_SIZE - 2},
        height=120 + 34 * len(names),
        margin={"l": 10, "r": 30, "t": 50, "b": 10},
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis={"range": [-1.75 * top, 1.75 * top], "zeroline": True, "zerolinecolor": "#444"},
        plot_bgcolor="white",
    )
    return legible(fig)


def probability_before_after(
    label_names: list[str], before: np.ndarray, after: np.ndarray, lang: str = "en"
) -> go.Figure:
    """Grouped bars in each class's own colour: every head on (pale, hatched) and the chosen heads off."""
    labels = [escape(class_name_in(n, lang)) for n in label_names]
    colours = [class_colours(label_names)[n] for n in label_names]
    fig = go.Figure(
        [
            go.Bar(
                name=translate("classifier.fig_all_on", lang),
                x=labels,
                y=before,
                marker={"color": colours, "opacity": 0.45, "pattern": {"shape": "/"}},
                texttemplate="%{y:.3f}",
                textposition="outside",
            ),
            go.Bar(
                name=translate("classifier.fig_heads_off", lang),
                x=labels,
                y=after,
                marker={"color": colours},
                texttemplate="%{y:.3f}",
                textposition="outside",
            ),
        ]
    )
    fig.update_layout(
        barmode="group",
        height=300,
        yaxis={"range": [0, 1.18], "title": translate("classifier.fig_probability", lang)},
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": 1.12},
        plot_bgcolor="white",
        meta="before-after",
    )
    return legible(fig)


# ---- one colour per class, everywhere --------------------------------------------------------
CLASS_COLOURS = {"negative": NEGATIVE_COLOUR, "positive": POSITIVE_COLOUR}
OTHER_COLOURS = ("#1b7837", "#762a83", "#e08214", "#35978f", "#8c510a", "#4d4d4d")


def class_colours(label_names: list[str]) -> dict[str, str]:
    """A fixed colour per class name: negative red, positive blue (as in the attribution colours),
    others from a palette by position."""
    return {
        name: CLASS_COLOURS.get(name.lower(), OTHER_COLOURS[i % len(OTHER_COLOURS)])
        for i, name in enumerate(label_names)
    }


def _probability_bar(label_names: list[str], probs: np.ndarray, lang: str = "en") -> go.Bar:
    colours = class_colours(label_names)
    return go.Bar(
        y=[escape(class_name_in(n, lang)) for n in label_names],
        x=probs,
        orientation="h",
        marker_color=[colours[n] for n in label_names],
        texttemplate="%{x:.1%}",
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{y}: %{x:.4f}<extra></extra>",
    )


def _probability_bars_validated(
    label_names: list[str], probabilities: np.ndarray, calibrated: bool, lang: str = "en"
) -> go.Figure:
    """The figure built through plotly's validation (a few tens of ms): the reference for the fast path."""
    key = "classifier.fig_probability_calibrated" if calibrated else "classifier.fig_probability_raw"
    fig = go.Figure(_probability_bar(label_names, np.asarray(probabilities, dtype=np.float64), lang))
    fig.update_layout(
        height=70 + 38 * len(label_names),
        margin={"l": 10, "r": 60, "t": 36, "b": 10},
        title={"text": escape(translate(key, lang))},
        xaxis={"range": [0, 1], "tickformat": ".0%", "fixedrange": True},
        yaxis={"autorange": "reversed", "automargin": True, "fixedrange": True},
        plot_bgcolor="white",
        meta="probability-bars",
    )
    return legible(fig)


@functools.lru_cache(maxsize=64)
def _probability_bars_layout(label_names: tuple[str, ...], calibrated: bool, lang: str) -> str:
    """The validated figure's layout (fonts included) as JSON, per classes, calibration and language."""
    fig = _probability_bars_validated(list(label_names), np.full(len(label_names), 0.5), calibrated, lang)
    return json.dumps(fig.to_plotly_json()["layout"])


def probability_bars(
    label_names: list[str], probabilities: np.ndarray, calibrated: bool, lang: str = "en"
) -> go.Figure:
    """Horizontal bars, one per class in its own colour, with the probability written on each.

    The same figure as plotly's validated build, in ~1 ms instead of ~30: the layout is validated once
    per (classes, calibration, language) and the bar is a plain trace, written as validation writes
    ``_probability_bar`` (a test compares the two builds)."""
    probs = np.asarray(probabilities, dtype=np.float64)
    colours = class_colours(label_names)
    trace = {
        "cliponaxis": False,
        "hovertemplate": "%{y}: %{x:.4f}<extra></extra>",
        "marker": {"color": [colours[n] for n in label_names]},
        "orientation": "h",
        "textposition": "outside",
        "texttemplate": "%{x:.1%}",
        "x": probs,
        "y": [escape(class_name_in(n, lang)) for n in label_names],
        "type": "bar",
    }
    layout = json.loads(_probability_bars_layout(tuple(label_names), calibrated, lang))
    return plain_figure([trace], layout)


def reliability_diagram(before: dict, after: dict, temperature: float, lang: str = "en") -> go.Figure:
    """Accuracy against confidence per bin (``transformer.text.calibration.Reliability.to_dict()``),
    before and after temperature scaling, with the diagonal of perfect calibration."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0.0, 1.0], y=[0.0, 1.0], mode="lines", line={"color": "#666", "dash": "dash"},
            name=translate("classifier.fig_perfect", lang), hoverinfo="skip",
        )
    )  # fmt: skip
    names = (
        (before, translate("classifier.fig_before", lang, ece=f"{before['ece']:.3f}"), "#9e9e9e"),
        (after, translate("classifier.fig_after", lang, t=f"{temperature:.2f}", ece=f"{after['ece']:.3f}"), "#c2410c"),
    )
    for data, name, colour in names:
        keep = [i for i, c in enumerate(data["count"]) if c > 0]
        fig.add_trace(
            go.Scatter(
                x=[data["confidence"][i] for i in keep],
                y=[data["accuracy"][i] for i in keep],
                mode="lines+markers",
                marker={
                    "size": [8 + 10 * (data["count"][i] / max(data["count"])) ** 0.5 for i in keep],
                    "color": colour,
                },
                line={"color": colour},
                name=escape(name),
                customdata=[data["count"][i] for i in keep],
                hovertemplate="%{x:.3f} → %{y:.3f} (n = %{customdata:,})<extra></extra>",
            )
        )
    seen = [c for d in (before, after) for c, n in zip(d["confidence"], d["count"]) if n > 0]
    low = min([0.5, *seen]) - 0.02
    fig.update_layout(
        title={"text": escape(translate("classifier.fig_reliability", lang))},
        height=420,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        xaxis={"title": translate("classifier.fig_confidence", lang), "range": [low, 1.01]},
        yaxis={"title": translate("classifier.fig_accuracy", lang), "range": [low, 1.01]},
        legend={"orientation": "h", "y": -0.2},
        plot_bgcolor="white",
        meta="reliability",
    )
    return legible(fig)
