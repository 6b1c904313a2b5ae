"""The reveal: the class's answers drawn beside the model's own, on the figure the question was about.

* tokens, labels, next tokens — one row per option: the model's number (attention weight, probability)
  beside the share of the class that picked it; the model's answer, the class's favourite and (on a
  student's screen) the student's own answer are marked at the end of their row;
* heads — the grid of heads coloured by the role's score, each cell with the number of students who
  picked it; the model's head framed in black, the class's favourite(s) in orange dashes, the student's
  in green dots;
* yes / no — the class's shares, the right answer marked, and in the title what the model predicted.

Pure functions: numbers in, a plotly Figure out (``meta`` names it for the tests). Which option carries
which mark (:func:`marks`), the colours and the title are shared with the students' HTML reveal
(``ui.classroom.reveal_html``): the projector draws this figure, a student's screen that HTML.
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
HEAT_LOW, HEAT_HIGH = (255, 255, 255), (107, 174, 214)  # a head's score 0 and 1 (rgb)
HEIGHT = 420
MARK_WORDS = {"model": "class.fig_model_pick", "class": "class.fig_class_pick", "you": "class.fig_your_pick"}
MARK_COLOURS = {"model": MODEL_COLOUR, "class": CLASS_COLOUR, "you": YOU_COLOUR}
HEAD_FRAMES = {"model": ("#000000", "solid"), "class": (CLASS_COLOUR, "dash"), "you": (YOU_COLOUR, "dot")}
PADS = {"model": 0.0, "class": 0.06, "you": 0.12}  # how far inside its cell each head frame is drawn


def marks(answer: int, counts: list[int], mine: int | None) -> list[tuple[str, ...]]:
    """Per option (one per count), the marks it carries, in this order: "model" (the model's answer),
    "class" (every option tied for the most picks; none while nobody has answered), "you" (``mine``, the
    reader's own answer; None: the projector, or no answer). Written beside a bar, framed on a head."""
    most = max(counts, default=0)
    return [tuple(mark for mark, on in (("model", i == answer), ("class", most > 0 and count == most), ("you", i == mine))
                  if on) for i, count in enumerate(counts)]  # fmt: skip


def _shares(counts: list[int]) -> np.ndarray:
    total = sum(counts)
    return np.asarray(counts, dtype=np.float64) / total if total else np.zeros(len(counts))


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
        dict(y=labels[i], x=right, text=" ".join(_mark_words(row, lang)), showarrow=False, xanchor="right", xref="x",
             yref="y")
        for i, row in enumerate(marks(answer, counts, mine))
        if row
    ]  # fmt: skip
    fig.update_layout(
        barmode="group",
        bargap=0.25,
        height=max(HEIGHT, int((34 * n + 150) * max(scale, 1.0))),
        meta="class-reveal",
        title=dict(text=reveal_title(payload, reveal, lang)),
        annotations=notes,
        yaxis=dict(type="category", autorange="reversed"),
        xaxis=dict(range=[0, right], title=dict(text=translate("class.fig_y", lang)), tickformat=".0%"),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0),
        margin=dict(l=20, r=20, t=90, b=50),
    )
    return fig


def _mark_words(row: tuple[str, ...], lang: str) -> list[str]:
    return [f'<span style="color:{MARK_COLOURS[m]}">{translate(MARK_WORDS[m], lang)}</span>' for m in row]


def reveal_title(payload: dict, reveal: dict, lang: str) -> str:
    """The reveal's title in ``lang`` (what the model predicted, for yes / no; the role, for heads), its
    names HTML-escaped: a Plotly title and an HTML heading alike."""
    if payload["kind"] == "head_role":
        role = escape(translate(ROLE_NAMES[payload["role"]], lang))
        return translate("class.fig_title_heads", lang, role=role)
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
                               colorscale=[[0, f"rgb{HEAT_LOW}"], [1, f"rgb{HEAT_HIGH}"]],
                               colorbar=dict(title=dict(text=translate("class.fig_score", lang))),
                               hovertemplate="%{y} %{x}: %{z:.3f}<extra></extra>"))  # fmt: skip
    shapes = []
    for index, row in enumerate(marks(answer, counts, mine)):
        la, h = divmod(index, heads)
        for mark in row:  # nested frames: the model's outermost, then the class's, then yours
            (colour, dash), pad = HEAD_FRAMES[mark], PADS[mark]
            shapes.append(dict(type="rect", x0=h - 0.5 + pad, x1=h + 0.5 - pad, y0=la - 0.5 + pad, y1=la + 0.5 - pad,
                               line=dict(color=colour, width=4, dash=dash), xref="x", yref="y"))  # fmt: skip
    fig.update_layout(
        height=max(HEIGHT, 90 * layers + 140),
        meta="class-reveal-heads",
        shapes=shapes,
        title=dict(text=reveal_title(payload, reveal, lang)),
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
