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
