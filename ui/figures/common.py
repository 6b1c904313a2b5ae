"""Helpers shared by the figure functions."""

from __future__ import annotations

import html

# Large enough to read on a projector.
FONT_SIZE = 16
DIVERGING = "RdBu"
SEQUENTIAL = "Blues"


def escape(text: str) -> str:
    """Plotly renders a few HTML tags in labels and hover text: show user text literally."""
    return html.escape(text, quote=False)


def token_labels(tokens: list[str], start: int = 0) -> list[str]:
    """Unique, position-prefixed labels ('3:the'): plotly merges equal category labels."""
    return [f"{start + i}:{escape(tok)}" for i, tok in enumerate(tokens)]


def axis_style(title: str | None, **extra) -> dict:
    """One axis, fonts large enough for a projector."""
    return dict(title=dict(text=title, font=dict(size=FONT_SIZE + 1)), tickfont=dict(size=FONT_SIZE), **extra)


def projector_layout(title: str, height: int, meta: str, title_size: int, margin: dict, **extra) -> dict:
    """A whole figure layout as one dict, fonts large enough for a projector; ``extra`` adds or overrides keys.
    One dict because each plotly ``update_*`` call re-validates the figure, which is slow on a shared CPU."""
    layout = dict(
        title=dict(text=title, font=dict(size=title_size)),
        height=height,
        meta=meta,
        font=dict(size=FONT_SIZE),
        margin=margin,
        hoverlabel=dict(font_size=FONT_SIZE),
        legend=dict(font=dict(size=FONT_SIZE)),
    )
    layout.update(extra)
    return layout


def panel_title(text: str, x: float, y: float = 1.0, size: int = FONT_SIZE + 2) -> dict:
    """A plotly annotation centred at paper coordinate ``x`` just above ``y``: the title of one side-by-side panel."""
    return dict(
        text=text,
        x=x,
        y=y,
        xref="paper",
        yref="paper",
        xanchor="center",
        yanchor="bottom",
        showarrow=False,
        font=dict(size=size),
    )
