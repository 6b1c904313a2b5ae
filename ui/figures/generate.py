"""Figures of the Generate page: pure functions (numpy in, plotly Figure out).

Every figure sets its fonts explicitly (at least 16 px, #111) through ``legible``. Each is written as a
plain spec (``ui.figures.spec``): a class generating at once draws these for every student's every run,
and the shared figure store builds them from the dict without plotly's validation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ui.i18n import translate

from .common import SEQUENTIAL, TEXT_COLOUR, axis_style, escape, projector_layout, token_labels
from .spec import figure_from_spec

MASKED_COLOUR = "#c8c8c8"
NEW_ROW_COLOUR = "#d62728"
MODEL_COLOUR = "#9ecae1"
KEPT_COLOUR = "#1f77b4"
AFTER_COLOUR = "#ff7f0e"
MAX_NUMBERED = 16  # numbers drawn in cells up to this many prefix tokens
MARGIN = dict(l=20, r=20, t=70, b=20)


def _height(rows: int, per_row: int = 40, base: int = 200) -> int:
    return min(900, base + per_row * rows)


@figure_from_spec
def next_token_bars(
    tokens: Sequence[str], probs: np.ndarray, filtered: np.ndarray | None, chosen: int | None, lang: str = "en",
    ranks: Sequence[int] | None = None,
) -> dict:  # fmt: skip
    """The most likely next tokens (most likely first): the model's probability and, when sampling,
    the probability after temperature/top-k/top-p (``filtered``; None for greedy); ``chosen`` (an
    index into ``tokens``) marked ▶. ``ranks`` (1 = likeliest) numbers the bars (default 1, 2, …): a
    chosen token from outside the top ones comes last with its own rank."""
    ranks = list(ranks) if ranks is not None else list(range(1, len(tokens) + 1))
    labels = [("▶ " if i == chosen else "") + f"{r}. {escape(tok)}" for i, (r, tok) in enumerate(zip(ranks, tokens))]
    series = [
        (probs, translate("generate.fig_model_prob", lang), MODEL_COLOUR if filtered is not None else KEPT_COLOUR)
    ]
    if filtered is not None:
        series.append((filtered, translate("generate.fig_kept_prob", lang), KEPT_COLOUR))
    data = [dict(type="bar", x=values, y=labels, orientation="h", name=name, marker=dict(color=colour),
                 text=[f"{p:.1%}" for p in values], textposition="outside", cliponaxis=False,
                 hovertemplate="%{y}: %{x:.2%}<extra></extra>") for values, name, colour in series]  # fmt: skip
    top = float(max(np.max(values, initial=0) for values, _, _ in series))
    per_row = 46 if filtered is not None else 36
    layout = (
        projector_layout(translate("generate.fig_next_title", lang, k=len(tokens)), 190 + per_row * len(tokens),
                         "generate-next", 20, dict(l=20, r=20, t=70, b=20), barmode="group", bargap=0.25,
                         uniformtext=dict(minsize=16, mode="show"), showlegend=filtered is not None,
                         legend=dict(orientation="h", y=-0.12, yanchor="top", x=0),
                         xaxis=axis_style(translate("generate.fig_probability", lang), range=[0, min(1.0, top) * 1.35 + 0.02],
                                          tickformat=".0%"),
                         yaxis=axis_style(None, autorange="reversed"))
    )  # fmt: skip
    return {"data": data, "layout": layout}


@figure_from_spec
def head_rows_heatmap(
    rows: np.ndarray, prefix: Sequence[str], lang: str = "en", kv_heads: Sequence[int] | None = None,
    first_layer: int = 0,
) -> dict:  # fmt: skip
    """rows (L, H, T): the predicting token's attention row over the T prefix tokens, one figure row
    per layer and head ("L1 H2"; the layers numbered from ``first_layer``, 0-based, when a page shows
    some of them); each row's largest weight is numbered. kv_heads (H,): for grouped-query attention,
    the key/value head (0-based) each query head shares, named in its label ("L1 H2 · KV1")."""
    n_layers, n_heads, n = rows.shape
    z = rows.reshape(n_layers * n_heads, n)
    names = [_head_name(first_layer + i, h, kv_heads, lang) for i in range(n_layers) for h in range(n_heads)]
    text = np.full(z.shape, "", dtype=object)
    best = z.argmax(-1)
    for r, c in enumerate(best):
        text[r, c] = f"{z[r, c]:.2f}"
    labels = token_labels(list(prefix))
    data = [dict(type="heatmap", z=z, x=labels, y=names, zmin=0, zmax=1, colorscale=SEQUENTIAL, text=text,
                 texttemplate="%{text}", textfont=dict(size=16), showscale=False,
                 hovertemplate=translate("generate.fig_rows_hover", lang))]  # fmt: skip
    layout = (
        projector_layout(translate("generate.fig_rows_title", lang), _height(len(names), 34, 220), "generate-rows",
                         20, MARGIN, xaxis=axis_style(translate("generate.fig_key_axis", lang)),
                         yaxis=axis_style(None, autorange="reversed"))
    )  # fmt: skip
    return {"data": data, "layout": layout}


def _head_name(layer: int, head: int, kv_heads: Sequence[int] | None, lang: str) -> str:
    if kv_heads is None:
        return translate("generate.fig_head_name", lang, layer=layer + 1, head=head + 1)
    return translate("generate.fig_head_name_kv", lang, layer=layer + 1, head=head + 1, kv=kv_heads[head] + 1)


@figure_from_spec
def masked_self_attention(matrix: np.ndarray, prefix: Sequence[str], title: str, lang: str = "en") -> dict:
    """matrix (T, T): one head's masked self-attention over the prefix; cells above the diagonal are
    blocked by the look-ahead mask (grey, labelled), the last row (the predicting token) is outlined."""
    n = matrix.shape[0]
    labels = token_labels(list(prefix))
    masked = np.triu(np.ones((n, n), dtype=bool), k=1)
    z = np.where(masked, np.nan, matrix)
    text = np.full((n, n), "", dtype=object)
    if n <= MAX_NUMBERED:
        text[-1] = [f"{v:.2f}" for v in matrix[-1]]
    data = [dict(type="heatmap", z=z, x=labels, y=labels, zmin=0, zmax=1, colorscale=SEQUENTIAL, text=text,
                 texttemplate="%{text}", textfont=dict(size=16), hoverongaps=False, showscale=False,
                 hovertemplate=translate("generate.fig_matrix_hover", lang))]  # fmt: skip
    outline = dict(type="rect", x0=-0.5, x1=n - 0.5, y0=n - 1.5, y1=n - 0.5, line=dict(color=NEW_ROW_COLOUR, width=3))
    note = dict(text=translate("generate.fig_masked", lang), x=1, y=1, xref="paper", yref="paper", xanchor="right",
                yanchor="bottom", showarrow=False, bgcolor=MASKED_COLOUR)  # fmt: skip
    layout = (
        projector_layout(title, _height(n, 26, 260), "generate-mask", 20, MARGIN, shapes=[outline],
                         annotations=[note], plot_bgcolor=MASKED_COLOUR,
                         xaxis=axis_style(translate("generate.fig_key_axis", lang)),
                         yaxis=axis_style(translate("generate.fig_query_axis", lang), autorange="reversed"))
    )  # fmt: skip
    return {"data": data, "layout": layout}


@figure_from_spec
def distribution_shift(tokens: Sequence[str], before: np.ndarray, after: np.ndarray, lang: str = "en") -> dict:
    """The next-token probabilities of the same tokens with every head on (before) and with the
    chosen heads off (after)."""
    labels = [f"{i + 1}. {escape(tok)}" for i, tok in enumerate(tokens)]
    data = [
        dict(type="bar", x=before, y=labels, orientation="h", name=translate("generate.fig_all_heads", lang),
             marker=dict(color=KEPT_COLOUR), text=[f"{p:.1%}" for p in before], textposition="outside", cliponaxis=False),
        dict(type="bar", x=after, y=labels, orientation="h", name=translate("generate.fig_heads_off", lang),
             marker=dict(color=AFTER_COLOUR), text=[f"{p:.1%}" for p in after], textposition="outside", cliponaxis=False),
    ]  # fmt: skip
    top = float(max(np.max(before, initial=0), np.max(after, initial=0)))
    layout = (
        projector_layout(translate("generate.fig_shift_title", lang), 150 + 46 * len(tokens), "generate-shift", 20,
                         MARGIN, barmode="group", uniformtext=dict(minsize=16, mode="show"),
                         legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                         xaxis=axis_style(translate("generate.fig_probability", lang), range=[0, min(1.0, top) * 1.35 + 0.02],
                                          tickformat=".0%"),
                         yaxis=axis_style(None, autorange="reversed"), font=dict(color=TEXT_COLOUR))
    )  # fmt: skip
    return {"data": data, "layout": layout}


@figure_from_spec
def answer_attention(
    rows: np.ndarray, share: np.ndarray, answer: Sequence[str], question: Sequence[str], title: str, lang: str = "en"
) -> dict:
    """rows (N, T_q): for each answer token (a figure row), how the attention of the token that predicted
    it was spread over the question's tokens (each row sums to 1 over the question); share (N,): the part
    of that attention that went to the question at all, written at the row's end and on hover."""
    n, t_q = rows.shape
    y = [f"{i + 1}. {escape(tok)}" for i, tok in enumerate(answer)]
    x = token_labels(list(question))
    text = np.full((n, t_q), "", dtype=object)
    for r, c in enumerate(rows.argmax(-1) if t_q else []):
        text[r, c] = f"{rows[r, c]:.2f}"
    hover = [[f"{s:.0%}"] * t_q for s in share]
    data = [dict(type="heatmap", z=rows, x=x, y=y, zmin=0, zmax=1, colorscale=SEQUENTIAL, text=text,
                 texttemplate="%{text}", textfont=dict(size=16), customdata=hover, colorbar=dict(thickness=14),
                 hovertemplate=translate("generate.fig_answer_hover", lang))]  # fmt: skip
    layout = projector_layout(
        title,
        _height(n, 30, 260),
        "generate-answer",
        20,
        dict(MARGIN, t=130),
        xaxis=axis_style(None, side="top"),
        yaxis=axis_style(None, autorange="reversed"),
    )
    layout["title"] |= dict(yref="container", y=0.98, yanchor="top")  # above the question's tokens
    return {"data": data, "layout": layout}
