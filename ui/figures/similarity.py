"""Figures of the Similarity page: numpy in, plotly Figure out.

Cosines run from -1 to 1 on a diverging scale centred on 0 (white), so an unrelated pair looks
pale and a close one dark blue; the value is written in each cell (plotly picks a dark or light
text colour for each cell's shade).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import DIVERGING, axis_style, escape, legible, projector_layout, tick_angle, token_labels

MARGIN = dict(l=20, r=20, t=80, b=20)
TOP_AXIS_MARGIN = dict(MARGIN, t=110)  # the title above the column numbers
LABEL_CHARS = 20  # a sentence's axis label: its number and its first characters (the matrix has 2/3 of the page)
# values are written in the cells only where 16-pixel text fits a cell ("-0.08" is ~46 px wide); more
# columns than this and plotly would shrink the text below the house's 16 px: hovering gives the value
MAX_WRITTEN_SENTENCES = 7  # matrix columns (~50 px each beside the sentence labels in 2/3 of a 1366-px page)
MAX_WRITTEN_TOKENS = 14  # token columns (~50 px each)


def sentence_label(index: int, text: str, chars: int = LABEL_CHARS) -> str:
    """'3. The first words of the…': the sentence's number (from 1) and its start, one line."""
    line = " ".join(text.split())
    short = line if len(line) <= chars else line[: chars - 1].rstrip() + "…"
    return f"{index + 1}. {escape(short)}"


def similarity_heatmap(similarity: np.ndarray, texts: Sequence[str], lang: str = "en") -> go.Figure:
    """similarity (N, N) cosine of N sentences' embeddings, labelled by their number and first words;
    each cell shows its value (up to MAX_WRITTEN_SENTENCES sentences), hovering shows both sentences in full."""
    n = similarity.shape[0]
    if similarity.shape != (n, n) or len(texts) != n:
        raise ValueError(f"similarity must be (N, N) for N texts; got {similarity.shape} for {len(texts)} texts.")
    labels = [sentence_label(i, text) for i, text in enumerate(texts)]
    numbers = [str(i + 1) for i in range(n)]  # columns by number: the rows name the sentences
    full = [escape(" ".join(text.split())[:200]) for text in texts]
    hover = [[f"{full[i]}<br>{full[j]}" for j in range(n)] for i in range(n)]
    heat = go.Heatmap(
        z=np.asarray(similarity, dtype=float), x=numbers, y=labels, zmin=-1, zmax=1, zmid=0,
        colorscale=DIVERGING, texttemplate="%{z:.2f}" if n <= MAX_WRITTEN_SENTENCES else None, customdata=hover,
        textfont=dict(size=16), xgap=1, ygap=1,
        colorbar=dict(thickness=16, title=dict(text=translate("similarity.fig_cosine", lang))),
        hovertemplate=translate("similarity.fig_pair_hover", lang),
    )  # fmt: skip
    height = min(900, 260 + 44 * n)
    layout = projector_layout(
        translate("similarity.fig_matrix_title", lang, count=n), height, "similarity-matrix", 20, TOP_AXIS_MARGIN,
        xaxis=axis_style(None, side="top", type="category"),
        yaxis=axis_style(None, autorange="reversed"),
    )  # fmt: skip
    return legible(go.Figure(heat, layout))


def token_heatmap(
    cosine: np.ndarray,
    tokens_a: Sequence[str],
    tokens_b: Sequence[str],
    best_for_a: np.ndarray,
    titles: tuple[int, int],
    lang: str = "en",
) -> go.Figure:
    """cosine (n, m) of sentence a's token states (rows) against sentence b's (columns); a black frame
    marks each row's best match (``best_for_a`` (n,) column indices). ``titles``: the two sentences' numbers
    (from 1). Values are written in the cells up to MAX_WRITTEN_TOKENS columns."""
    n, m = cosine.shape
    if len(tokens_a) != n or len(tokens_b) != m or len(best_for_a) != n:
        raise ValueError(f"cosine is {n}x{m} but there are {len(tokens_a)} x {len(tokens_b)} tokens.")
    x, y = token_labels(list(tokens_b), 1), token_labels(list(tokens_a), 1)
    write = m <= MAX_WRITTEN_TOKENS
    heat = go.Heatmap(
        z=np.asarray(cosine, dtype=float), x=x, y=y, zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING,
        texttemplate="%{z:.2f}" if write else None, textfont=dict(size=16), xgap=1, ygap=1,
        colorbar=dict(thickness=16, title=dict(text=translate("similarity.fig_cosine", lang))),
        hovertemplate=translate("similarity.fig_token_hover", lang),
    )  # fmt: skip
    # a frame around each row's best cell (category axes place cell j at j - 0.5 .. j + 0.5)
    frames = [
        dict(type="rect", xref="x", yref="y", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5,
             line=dict(color="#111111", width=3))
        for i, j in enumerate(np.asarray(best_for_a, dtype=int))
    ]  # fmt: skip
    a, b = titles
    height = min(900, 240 + 30 * n)
    layout = projector_layout(
        translate("similarity.fig_tokens_title", lang, a=a, b=b), height, "similarity-tokens", 20, MARGIN,
        xaxis=axis_style(translate("similarity.fig_tokens_of", lang, number=b), tickangle=tick_angle(x, 900)),
        yaxis=axis_style(translate("similarity.fig_tokens_of", lang, number=a), autorange="reversed"),
        shapes=frames,
    )  # fmt: skip
    return legible(go.Figure(heat, layout))
