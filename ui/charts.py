"""Showing a figure on a page: explicit fonts at this session's presenter scale, Streamlit's theme off.

Streamlit's plotly theme replaces a figure's fonts with its own (12.75 px, grey): every figure
goes through :func:`show`, which turns the theme off (``theme=None``) and, in presenter mode,
re-sizes the figure's fonts with :func:`ui.figures.common.legible`.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from .figure_cache import SharedFigure
from .figures.common import at_font_scale
from .presenter import figure_font_scale


def plot_config(filename: str) -> dict:
    """The plotly toolbar: no logo; the camera button saves a 2× PNG named ``filename``.png."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename}}


def show(fig: go.Figure, *, filename: str = "figure", where=None, **kwargs):
    """``st.plotly_chart`` (or ``where.plotly_chart``) with fonts that no theme overrides; ``kwargs``
    go to ``plotly_chart`` (key, on_select, ...). Returns what ``plotly_chart`` returns. A figure
    from the shared store (``ui.figure_cache``) already has this session's font scale."""
    if not isinstance(fig, SharedFigure):
        at_font_scale(fig, figure_font_scale())
    return (where or st).plotly_chart(fig, theme=None, config=plot_config(filename), **kwargs)
