"""Figures of the Masks page: the masks themselves and the padded batch, and the token grid that these
and the step-by-step figures (:mod:`ui.figures.stepper`) share. Numpy in, ``plotly.graph_objects.Figure`` out.

Masks are boolean, True where a query may attend (the package convention). Token axes take
labels from ``token_labels``. For short inputs (``numbers=True``) every cell shows its value.

Every font is set where the figure is built (``projector_layout``, ``axis_style``, the colour bars'
``COLORBAR``), so these figures skip ``legible``: its ``update_layout`` re-validates the whole figure,
which took about two thirds of each figure's CPU. The traces and layouts are plain dicts given to
plotly unvalidated (:func:`plain_figure`): validating them took most of the rest, and a mask toggle redraws
six figures. tests/test_figures_teaching.py checks that validating them would change nothing.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from transformer.analysis.stepper import RowChange
from ui.i18n import translate

from .common import (
    CHAR_WIDTH,
    FONT_SIZE,
    axis_style,
    font,
    plain_figure,
    projector_layout,
    tick_angle,
)

NUMBERS_UP_TO = 16  # tokens; beyond that numbers in cells are unreadable on a projector (fewer decimals past 12)
CELL_FONT = 14  # px of the numbers written in cells (never smaller: below that they are not read)
HALF_WIDTH_PX = 300  # plot area of a figure in half of the page at 1366 px (after margins and colour bar)
FULL_WIDTH_PX = 680  # ... across the whole page (measured in the browser test's screenshots)
THIRD_WIDTH_PX = 160  # ... in a third of the page
OPEN, IGNORED, BLOCKED = "#2b6cb0", "#9cc3ea", "#d9d9d9"
BLOCKED_TEXT = "−1e9"
COLORBAR = dict(thickness=16, tickfont=font(), title=dict(font=font()))


def figure_layout(title: str, height: int, meta: str, **extra) -> dict:
    return projector_layout(
        title, height, meta, FONT_SIZE + 4, dict(l=90, r=30, t=70, b=80), **{"plot_bgcolor": "white", **extra}
    )


def grid_layout(
    title: str,
    rows: list[str],
    cols: list[str],
    meta: str,
    x_title: str = "key",
    width_px: float = HALF_WIDTH_PX,
    lang: str = "en",
    y_title: str | None = "",
    **extra,
) -> dict:
    """Queries down (first at the top), keys (or dimensions) across; key labels turn only when they do not fit.
    ``y_title`` "" is "query"; None leaves the rows' axis untitled."""
    # Square data (T × T) gets square cells: the y axis is tied to the x axis and the figure is about as
    # tall as it is wide (it was 340 px tall in a third of the page: cells 7 px wide and 35 px tall).
    square = len(rows) == len(cols)
    tie = dict(scaleanchor="x", scaleratio=1, constrain="domain") if square else {}
    height = min(820, int(width_px) + 220) if square else square_height(len(rows))
    return figure_layout(
        title,
        height,
        meta,
        xaxis=axis_style(
            x_title,
            type="category",
            tickangle=tick_angle(cols, width_px),
            automargin=True,
            **({"constrain": "domain"} if square else {}),
        ),  # fmt: skip
        yaxis=axis_style(
            translate("figures.query", lang) if y_title == "" else y_title,
            type="category",
            autorange="reversed",
            **tie,
        ),
        **extra,
    )


def square_height(n: int) -> int:
    return int(min(820, max(340, 42 * n + 170)))


def cell_font(n: int) -> int:
    return 16 if n <= 8 else CELL_FONT


def fits(chars: int, columns: int, width_px: float) -> bool:
    """Whether ``chars`` characters at CELL_FONT px fit in each of ``columns`` cells across ``width_px``."""
    return chars * CHAR_WIDTH * CELL_FONT + 4 <= width_px / max(columns, 1)


def mask_heatmap(
    mask: np.ndarray,
    labels: list[str],
    title: str,
    ignored_rows: np.ndarray | None = None,
    changed: np.ndarray | None = None,
    meta: str = "mask",
    width_px: float = THIRD_WIDTH_PX,
    lang: str = "en",
    clickable: bool = False,
) -> go.Figure:
    """A (T, T) bool mask: blue = may attend (1), grey = blocked (0); pale blue rows are queries whose
    output is ignored (``<pad>`` queries, ``ignored_rows`` (T,) bool). ``changed`` (T, T) bool outlines cells.
    ``clickable``: a transparent marker over every cell carries its (query, key), so that a click on the
    cell selects it (``st.plotly_chart(on_select=...)``; read it with :func:`clicked_cell`)."""
    n = mask.shape[0]
    level = mask.astype(float) * 2  # 0 blocked, 2 open
    if ignored_rows is not None:
        level[ignored_rows] = np.where(mask[ignored_rows], 1.0, 0.0)
    scale = [[0, BLOCKED], [0.33, BLOCKED], [0.33, IGNORED], [0.66, IGNORED], [0.66, OPEN], [1, OPEN]]
    numbers = n <= NUMBERS_UP_TO and fits(2, n, width_px)  # "1" or "0" with a character's room around it
    traces = [
        dict(
            type="heatmap",
            z=level,
            x=labels,
            y=labels,
            zmin=0,
            zmax=2,
            colorscale=scale,
            showscale=False,
            xgap=2,
            ygap=2,
            text=np.where(mask, "1", "0") if numbers else None,
            texttemplate="%{text}" if numbers else None,
            textfont=dict(size=cell_font(n)),
            hovertemplate=translate("figures.mask_hover", lang) + "<extra></extra>",
        )
    ]
    shapes = _changed_marks(changed, labels, traces)
    extra = dict(clickmode="event+select", dragmode=False) if clickable else {}
    if clickable:
        traces.append(_cell_targets(labels, width_px, lang))
    layout = grid_layout(
        title,
        labels,
        labels,
        meta,
        translate("figures.key", lang),
        width_px=width_px,
        lang=lang,
        shapes=shapes or None,
        **extra,
    )
    return plain_figure(traces, layout)


def _cell_targets(labels: list[str], width_px: float, lang: str) -> dict:
    """A transparent square marker on each cell (a heatmap cell itself is not a selectable point)."""
    n = len(labels)
    q, k = np.divmod(np.arange(n * n), n)
    return dict(
        type="scatter",
        mode="markers",
        x=[labels[i] for i in k],
        y=[labels[i] for i in q],
        customdata=np.stack([q, k], axis=1).tolist(),
        marker=dict(symbol="square", size=max(6, int(0.8 * width_px / max(n, 1))), color="rgba(0,0,0,0)"),
        hovertemplate=translate("figures.mask_click_hover", lang) + "<extra></extra>",
        showlegend=False,
        name="switch",
    )


def clicked_cell(state) -> tuple[int, int] | None:
    """(query, key) of the cell clicked in a ``clickable`` :func:`mask_heatmap`, from the selection state
    ``st.plotly_chart(on_select=...)`` keeps; None when no cell was clicked."""
    points = ((state or {}).get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, dict):  # a typed array comes back from the browser as {"0": .., "1": ..}
            custom = [custom[k] for k in sorted(custom, key=int)]
        if isinstance(custom, list | tuple) and len(custom) >= 2:
            return int(custom[0]), int(custom[1])
    return None


MAX_OUTLINES = 144  # one shape per cell: beyond this the browser slows down, so changed cells get a tint


def _changed_marks(changed: np.ndarray | None, labels: list[str], traces: list) -> list[dict]:
    """Orange squares around changed cells (returned as layout shapes), or, when there are many, an orange
    tint added to ``traces``."""
    if changed is None or not changed.any():
        return []
    if changed.sum() > MAX_OUTLINES:
        traces.append(
            dict(
                type="heatmap",
                z=np.where(changed, 1.0, np.nan),
                x=labels,
                y=labels,
                opacity=0.55,
                showscale=False,
                colorscale=[[0, "#ff7f0e"], [1, "#ff7f0e"]],
                hoverinfo="skip",
                name="changed",
            )
        )
        return []
    return [
        dict(
            type="rect",
            x0=int(k) - 0.5,
            x1=int(k) + 0.5,
            y0=int(q) - 0.5,
            y1=int(q) + 0.5,
            xref="x",
            yref="y",
            line=dict(color="#ff7f0e", width=4),
        )
        for q, k in zip(*np.nonzero(changed))
    ]


def padded_frame(
    tokens: list[list[str]],
    ids: np.ndarray,
    unknown: list[list[bool]] | None = None,
    pad_token: str = "<pad>",
    unk_token: str = "<unk>",
    lang: str = "en",
) -> pd.DataFrame:
    """The padded batch (B, T) as a table of ``"id token"`` cells, one row per sentence: ``<pad>`` is written
    out, and an unknown word shows as ``<unk> (word)``."""
    b, t = ids.shape

    def cell(r: int, c: int) -> str:
        if c >= len(tokens[r]):
            return f"{int(ids[r, c])} {pad_token}"
        word = f"{unk_token} ({tokens[r][c]})" if unknown is not None and unknown[r][c] else tokens[r][c]
        return f"{int(ids[r, c])} {word}"

    cells = [[cell(r, c) for c in range(t)] for r in range(b)]
    return pd.DataFrame(
        cells,
        index=[translate("figures.sentence_row", lang, n=r + 1) for r in range(b)],
        columns=[str(c) for c in range(t)],
    )


def describe_changes(changes: list[RowChange], labels: list[str], lang: str = "en", limit: int = 6) -> list[str]:
    """One plain sentence per changed query row (at most ``limit``, then a count of the rest)."""
    lines = []
    for change in changes[:limit]:
        q = labels[change.query]
        if not change.after.any():
            lines.append(translate("figures.change_all_blocked", lang, query=q))
            continue
        parts = []
        if change.newly_blocked:
            keys = ", ".join(labels[k] for k in change.newly_blocked)
            parts.append(translate("figures.change_blocked", lang, keys=keys, moved=f"{change.moved:.2f}"))
        if change.newly_opened:
            keys = ", ".join(labels[k] for k in change.newly_opened)
            gained = float(change.after[change.newly_opened].sum())
            parts.append(translate("figures.change_opened", lang, keys=keys, gained=f"{gained:.2f}"))
        biggest = np.argsort(-np.abs(change.after - change.before))[:3]
        moves = ", ".join(f"{labels[k]} {change.before[k]:.2f}→{change.after[k]:.2f}" for k in biggest)
        shift = f"{change.output_shift:.2f}"
        lines.append(translate("figures.change_row", lang, query=q, parts="; ".join(parts), moves=moves, shift=shift))
    if len(changes) > limit:
        lines.append(translate("figures.change_more", lang, count=len(changes) - limit))
    return lines


def md_code(text: str) -> str:
    """``text`` as a markdown code span: shown literally (no emphasis, links, HTML or ``:emoji:`` shortcodes)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)  # longer than any run inside
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_labels(tokens: list[str]) -> list[str]:
    """Position-prefixed token labels ('3:the') for st.markdown text, as code spans."""
    return [md_code(f"{i}:{tok}") for i, tok in enumerate(tokens)]


def fill_text(fill: float) -> str:
    """-1e9 rather than -1e+09."""
    mantissa, exponent = f"{fill:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("-", "−")
