"""The reveal: the class's answers drawn beside the model's own, on the figure the question was about.

* tokens, labels, next tokens — one row per option: the model's number (attention weight, probability)
  beside the share of the class that picked it; the model's answer, the class's favourite and (on a
  student's screen) the student's own answer are marked at the end of their row;
* heads — the grid of heads coloured by the role's score, each cell with the number of students who
  picked it; the model's head framed in black, the class's favourite in orange, the student's in blue;
* yes / no — the class's shares, the right answer marked, and in the title what the model predicted.

Pure functions: numbers in, a plotly Figure out (``meta`` names it for the tests).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..figures.common import escape, legible
from ..i18n import class_name_in, translate
from .questions import ROLE_NAMES, option_text

MODEL_COLOUR = "#1F4E99"  # dark blue
CLASS_COLOUR = "#E8730C"  # orange
YOU_COLOUR = "#0E7C3A"  # green
HEIGHT = 420


def _shares(counts: list[int]) -> np.ndarray:
    total = sum(counts)
    return np.asarray(counts, dtype=np.float64) / total if total else np.zeros(len(counts))


def _favourite(counts: list[int]) -> int | None:
    return int(np.argmax(counts)) if sum(counts) else None


def reveal_figure(
    payload: dict,
    reveal: dict,
    answer: int,
    counts: list[int],
    mine: int | None,
    lang: str,
    scale: float = 1.0,
) -> go.Figure:
    """The reveal of one question: ``reveal`` the model's numbers, ``answer`` its choice, ``counts`` the
    class's choices per option, ``mine`` this reader's choice (None: the projector, or no answer)."""
    if payload["kind"] == "head_role":
        fig = _head_grid(payload, reveal, answer, counts, mine, lang)
    else:
        fig = _bars(payload, reveal, answer, counts, mine, lang, scale)
    return legible(fig, scale)


def _marks(n: int, answer: int, counts: list[int], mine: int | None, lang: str) -> list[list[str]]:
    """Per option, the words written beside it: the model's pick, the class's favourite (every option tied
    for the most picks), yours."""
    marks: list[list[str]] = [[] for _ in range(n)]
    marks[answer].append(f'<span style="color:{MODEL_COLOUR}">{translate("class.fig_model_pick", lang)}</span>')
    most = max(counts, default=0)
    for i, count in enumerate(counts):
        if most and count == most:
            marks[i].append(f'<span style="color:{CLASS_COLOUR}">{translate("class.fig_class_pick", lang)}</span>')
    if mine is not None:
        marks[mine].append(f'<span style="color:{YOU_COLOUR}">{translate("class.fig_your_pick", lang)}</span>')
    return marks


def _bars(payload, reveal, answer, counts, mine, lang, scale) -> go.Figure:
    """Options down the side (long tokens and Hangul read level, however many), two bars each."""
    n = len(payload["options"])
    labels = [escape(option_text(payload, i, lang)) for i in range(n)]
    shares = _shares(counts)
    yesno = payload["kind"] == "correct"
    traces = []
    if not yesno:
        values = np.asarray(reveal.get("values", [0.0] * n), dtype=np.float64)
        name = translate("class.fig_weight" if payload["kind"] == "attend" else "class.fig_probability", lang)
        line = [3 if i == answer else 0 for i in range(n)]
        traces.append(go.Bar(y=labels, x=values, name=name, orientation="h", hovertemplate="%{y}: %{x:.3f}<extra></extra>",
                             marker=dict(color=MODEL_COLOUR, line=dict(width=line, color="#000000"))))  # fmt: skip
    traces.append(go.Bar(y=labels, x=shares, name=translate("class.fig_share", lang), orientation="h",
                         marker_color=CLASS_COLOUR, customdata=counts, hovertemplate="%{y}: %{customdata}<extra></extra>",
                         text=[str(c) if c else "" for c in counts], textposition="outside"))  # fmt: skip
    fig = go.Figure(traces)
    top = max([1.0 if yesno else float(np.max(traces[0].x, initial=0.0)), float(shares.max(initial=0.0))])
    right = max(top, 0.05) * 1.45  # room for the count and the marks beside the longest bar
    notes = [
        dict(y=labels[i], x=right, text=" ".join(words), showarrow=False, xanchor="right", xref="x", yref="y")
        for i, words in enumerate(_marks(n, answer, counts, mine, lang))
        if words
    ]
    fig.update_layout(
        barmode="group",
        bargap=0.25,
        height=max(HEIGHT, int((34 * n + 150) * max(scale, 1.0))),
        meta="class-reveal",
        title=dict(text=_title(payload, reveal, lang)),
        annotations=notes,
        yaxis=dict(type="category", autorange="reversed"),
        xaxis=dict(range=[0, right], title=dict(text=translate("class.fig_y", lang)), tickformat=".0%"),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
        margin=dict(l=20, r=20, t=90, b=50),
    )
    return fig


def _title(payload: dict, reveal: dict, lang: str) -> str:
    if payload["kind"] == "correct":
        predicted = escape(class_name_in(reveal.get("predicted", ""), lang))
        return translate("class.fig_title_correct", lang, predicted=predicted,
                         truth=escape(class_name_in(payload["truth"], lang)))  # fmt: skip
    return translate("class.fig_title", lang)


def _head_grid(payload, reveal, answer, counts, mine, lang) -> go.Figure:
    layers, heads = payload["layers"], payload["heads"]
    scores = np.asarray(reveal.get("values", [0.0] * layers * heads), dtype=np.float64).reshape(layers, heads)
    grid_counts = np.asarray(counts).reshape(layers, heads)
    text = [[f"{scores[la, h]:.2f}<br>{translate('class.fig_students', lang, n=int(grid_counts[la, h]))}"
             for h in range(heads)] for la in range(layers)]  # fmt: skip
    xs = [translate("class.fig_head", lang, head=h + 1) for h in range(heads)]
    ys = [translate("class.fig_layer", lang, layer=la + 1) for la in range(layers)]
    fig = go.Figure(go.Heatmap(z=scores, x=xs, y=ys, text=text, texttemplate="%{text}", zmin=0, zmax=1,
                               colorscale=[[0, "rgb(255, 255, 255)"], [1, "rgb(107, 174, 214)"]],
                               colorbar=dict(title=dict(text=translate("class.fig_score", lang))),
                               hovertemplate="%{y} %{x}: %{z:.3f}<extra></extra>"))  # fmt: skip
    shapes = []
    for index, colour, dash, pad in (
        (answer, "#000000", "solid", 0.0),
        (_favourite(counts), CLASS_COLOUR, "dash", 0.06),
        (mine, YOU_COLOUR, "dot", 0.12),
    ):
        if index is None:
            continue
        la, h = divmod(index, heads)
        shapes.append(dict(type="rect", x0=h - 0.5 + pad, x1=h + 0.5 - pad, y0=la - 0.5 + pad, y1=la + 0.5 - pad,
                           line=dict(color=colour, width=4, dash=dash), xref="x", yref="y"))  # fmt: skip
    role = escape(translate(ROLE_NAMES[payload["role"]], lang))
    fig.update_layout(
        height=max(HEIGHT, 90 * layers + 140),
        meta="class-reveal-heads",
        shapes=shapes,
        title=dict(text=translate("class.fig_title_heads", lang, role=role)),
        yaxis=dict(autorange="reversed", type="category"),
        xaxis=dict(type="category", side="top"),
        margin=dict(l=90, r=20, t=110, b=60),
        annotations=[
            dict(
                text=translate("class.fig_heads_key", lang),
                x=0,
                y=-0.08,
                xref="paper",
                yref="paper",
                showarrow=False,
                xanchor="left",
                yanchor="top",
            )
        ],  # fmt: skip
    )
    return fig
