"""Figures of the Fill-in-the-blank page: pure functions (numpy in, plotly Figure out).

Every figure sets its fonts explicitly (at least 16 px, #111) through ``legible``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import SEQUENTIAL, TEXT_COLOUR, axis_style, escape, legible, projector_layout, token_labels

FIRST_COLOUR = "#1f77b4"
OTHER_COLOUR = "#9ecae1"
BLANK_COLOUR = "#d62728"
UNIFORM_TEXT = dict(minsize=16, mode="show")  # plotly would otherwise shrink bar labels below 16 px
MARGIN = dict(l=20, r=20, t=70, b=20)
BAR_MARGIN = dict(MARGIN, r=80)  # room for the label of a bar that reaches 100 % (drawn beyond the axis)


def guess_bars(
    tokens: Sequence[str], probabilities: Sequence[float], blank: int, lang: str = "en", meta: str | None = None
) -> go.Figure:
    """The top guesses for blank number ``blank`` (1-based): ``tokens`` (K,) with ``probabilities`` (K,),
    most likely first, drawn top to bottom; the first darker."""
    probs = np.asarray(probabilities, dtype=float)
    labels = [f"{i + 1}. {escape(tok)}" for i, tok in enumerate(tokens)]  # unique: plotly merges equal labels
    colours = [FIRST_COLOUR if i == 0 else OTHER_COLOUR for i in range(len(labels))]
    fig = go.Figure(
        go.Bar(x=probs, y=labels, orientation="h", marker_color=colours, text=[f"{p:.1%}" for p in probs],
               textposition="outside", textfont=dict(size=16, color=TEXT_COLOUR), cliponaxis=False,
               hovertemplate="%{y}: %{x:.4f}<extra></extra>")
    )  # fmt: skip
    title = translate("fill_mask.fig_guesses_title", lang, blank=blank, k=len(labels))
    fig.update_layout(
        projector_layout(title, 130 + 44 * len(labels), meta or f"fill-mask-guesses-{blank}", 20, BAR_MARGIN,
                         uniformtext=UNIFORM_TEXT,
                         xaxis=axis_style(translate("fill_mask.fig_probability", lang), range=[0, 1],
                                          tickformat=".0%"),
                         yaxis=axis_style(None, autorange="reversed", tickmode="array", tickvals=labels))
    )  # fmt: skip
    return legible(fig)


def blank_heads_heatmap(
    rows: np.ndarray, tokens: Sequence[str], position: int, layer: int, blank: int, lang: str = "en"
) -> go.Figure:
    """rows (H, T): in layer ``layer`` (1-based), how much each head's query at the blank (token
    ``position``) attends to every token; the blank's own column is marked."""
    heads = [translate("fill_mask.fig_head", lang, head=h + 1) for h in range(rows.shape[0])]
    cols = token_labels(list(tokens))
    hover = translate("fill_mask.fig_heads_hover", lang)
    fig = go.Figure(
        go.Heatmap(z=np.asarray(rows, dtype=float), x=cols, y=heads, zmin=0, zmax=1, colorscale=SEQUENTIAL,
                   hovertemplate=hover, colorbar=dict(title=dict(text=translate("fill_mask.fig_weight", lang))))
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(x=[cols[position]] * len(heads), y=heads, mode="markers", hoverinfo="skip",
                   name=translate("fill_mask.fig_blank_marker", lang),
                   marker=dict(symbol="square-open", size=26, color=BLANK_COLOUR, line=dict(width=3)))
    )  # fmt: skip
    title = translate("fill_mask.fig_heads_title", lang, blank=blank, layer=layer)
    fig.update_layout(
        projector_layout(title, min(900, 220 + 40 * len(heads)), "fill-mask-heads", 20, MARGIN,
                         xaxis=axis_style(translate("fill_mask.fig_key_axis", lang), tickmode="array", tickvals=cols),
                         yaxis=axis_style(None, autorange="reversed", tickmode="array", tickvals=heads),
                         legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    )  # fmt: skip
    return legible(fig)


def layer_head_focus(weights: np.ndarray, looked_at: Sequence[Sequence[str | None]], lang: str = "en") -> go.Figure:
    """Where every head looked from the blank: weights (L, H) the largest weight of the blank's row in
    each layer and head, ``looked_at`` (L × H) the token it went to, written in each cell ("no clear
    focus" where it is None: the head's weights were too flat to name one token)."""
    layers, heads = weights.shape
    x = [translate("fill_mask.fig_head", lang, head=h + 1) for h in range(heads)]
    y = [translate("fill_mask.fig_layer", lang, layer=layer + 1) for layer in range(layers)]
    unfocused = translate("fill_mask.no_focus", lang)
    text = [[unfocused if tok is None else escape(tok) for tok in row] for row in looked_at]
    fig = go.Figure(
        go.Heatmap(z=np.asarray(weights, dtype=float), x=x, y=y, zmin=0, zmax=1, colorscale=SEQUENTIAL, text=text,
                   texttemplate="%{text}" if heads <= 16 else None, textfont=dict(size=16),
                   hovertemplate=translate("fill_mask.fig_focus_hover", lang),
                   colorbar=dict(title=dict(text=translate("fill_mask.fig_weight", lang))))
    )  # fmt: skip
    fig.update_layout(
        projector_layout(translate("fill_mask.fig_focus_title", lang), min(900, 200 + 40 * layers),
                         "fill-mask-focus", 20, MARGIN,
                         xaxis=axis_style(None, tickmode="array", tickvals=x),
                         yaxis=axis_style(None, autorange="reversed", tickmode="array", tickvals=y))
    )  # fmt: skip
    return legible(fig)


def sentence_shares(scores: Sequence[float]) -> np.ndarray:
    """(K,) each whole sentence's probability divided by the sum over the K: a softmax of their log-probabilities."""
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max())
    return e / e.sum()


def decoder_bars(
    words: Sequence[str], scores: Sequence[float], left_ranks: Sequence[int], scored: int, lang: str = "en"
) -> go.Figure:
    """A decoder's candidates for one blank, best sentence first: ``scores`` (K,) the log-probability of each
    whole sentence with the word in the blank, drawn as its share of the K sentences' probability;
    ``left_ranks`` (K,) where each word's first piece stood among the next tokens after the words before
    the blank; ``scored`` how many candidates were scored."""
    shares = sentence_shares(scores)
    labels = [f"{i + 1}. {escape(w)}" for i, w in enumerate(words)]
    colours = [FIRST_COLOUR if i == 0 else OTHER_COLOUR for i in range(len(labels))]
    text = [translate("fill_mask.fig_sentence_bar", lang, share=f"{p:.0%}", score=f"{s:.1f}")
            for p, s in zip(shares, scores)]  # fmt: skip
    hover = translate("fill_mask.fig_sentence_hover", lang)
    fig = go.Figure(
        go.Bar(x=shares, y=labels, orientation="h", marker_color=colours, text=text, textposition="outside",
               textfont=dict(size=16, color=TEXT_COLOUR), cliponaxis=False,
               customdata=np.column_stack([np.asarray(scores, dtype=float), np.asarray(left_ranks)]),
               hovertemplate=hover)
    )  # fmt: skip
    title = translate("fill_mask.fig_sentences_title", lang, k=len(labels), n=scored)
    fig.update_layout(
        projector_layout(title, 130 + 44 * len(labels), "fill-decoder-sentences", 20, dict(MARGIN, r=190),
                         uniformtext=UNIFORM_TEXT,
                         xaxis=axis_style(translate("fill_mask.fig_share", lang), range=[0, 1], tickformat=".0%"),
                         yaxis=axis_style(None, autorange="reversed", tickmode="array", tickvals=labels))
    )  # fmt: skip
    return legible(fig)
