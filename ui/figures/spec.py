"""Figures written as plain specs: a figure function that returns the dict plotly.js draws, and the
legible fonts (``common.legible``) applied to that dict without building a plotly object.

Building a figure with ``plotly.graph_objects`` validates every property: ~30 ms for the Generate page's
next-token bars or head rows (measured on this 2-core machine), and a class generating at once built
them for every student's every run (71 % of the server's busy samples in ``bench/bench_generate_class.py``).
A function decorated with :func:`figure_from_spec` writes its figure as a dict once; called as usual
it still returns a validated ``go.Figure`` (tests, the CLI, an edit), while the shared figure store
(``ui.figure_cache``) takes the dict through :func:`legible_spec` (well under a millisecond). The two
give the same figure: ``tests/test_figure_spec.py`` compares them property by property.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
from _plotly_utils.utils import to_typed_array_spec

from .common import FRAME_PX, MAX_GROWN_HEIGHT, ROW_LABEL_SPACING, TEMPLATE, TEXT_COLOUR, font, font_px, legible

AXIS = re.compile(r"^[xy]axis\d*$")


def figure_from_spec(build: Callable[..., dict]) -> Callable[..., go.Figure]:
    """``build`` (returns a spec: ``{"data": [trace dicts with "type"], "layout": {...}}``) as a figure
    function: calling it returns the legible, validated ``go.Figure``; ``.spec`` is ``build`` itself."""

    @functools.wraps(build)
    def figure(*args, **kwargs) -> go.Figure:
        return legible(go.Figure(build(*args, **kwargs)))

    figure.spec = build
    return figure


def merged(base: dict | None, update: dict) -> dict:
    """``base`` with ``update`` laid over it as plotly's ``update_layout`` does: dicts merged key by key,
    anything else replaced. Neither argument is modified."""
    out = dict(base or {})
    for key, value in update.items():
        out[key] = merged(out.get(key), value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def legible_spec(spec: dict, scale: float = 1.0) -> dict:
    """``common.legible`` on a plain spec: every text font explicit, at the presenter ``scale``; returns a
    new spec (the traces' arrays are shared with ``spec``, never copied)."""
    size = font_px(scale)
    layout = dict(spec.get("layout") or {})
    title = layout.get("title") or {}
    if isinstance(title, str):
        title = layout["title"] = {"text": title}
    chosen_title = ((title.get("font") or {}).get("size") or 0) if title.get("text") else 0
    update = {
        "font": font(scale),
        "title": {"font": {"size": max(size + 4, chosen_title), "color": TEXT_COLOUR}},
        "hoverlabel": {"font": {"size": size}},
        "legend": {"font": font(scale)},
    }
    axes = {"xaxis", "yaxis"} | {name for name in layout if AXIS.match(name)}
    for name in sorted(axes):
        if (layout.get(name) or {}).get("visible") is not False:
            update[name] = {"tickfont": font(scale), "title": {"font": font(scale, 1)}, "color": TEXT_COLOUR}
    if layout.get("annotations"):
        update["annotations"] = [_note(note, size) for note in layout["annotations"]]
    data = [_trace(trace, scale) for trace in spec.get("data") or []]
    if scale > 1.0 and layout.get("height"):
        room = _room_for_row_labels(data, layout, size)
        if 0 < room <= MAX_GROWN_HEIGHT:
            update["height"] = max(layout["height"], room)
            update["yaxis"] = {**update.get("yaxis", {}), "dtick": 1}
    layout = merged(layout, update)
    layout["template"] = TEMPLATE  # assigned, as legible does
    return {"data": data, "layout": layout}


def _note(note: dict, size: int) -> dict:
    chosen = note.get("font") or {}
    return {**note, "font": {**chosen, "size": max(size, chosen.get("size") or 0),
                             "color": chosen.get("color") or TEXT_COLOUR}}  # fmt: skip


def _trace(trace: dict, scale: float) -> dict:
    """One trace: its arrays as the validated figure sends them, its colour bar's fonts set."""
    trace = {key: _sent(value) for key, value in trace.items()}
    if not _has_colorbar(trace["type"]) or trace.get("showscale") is False:
        return trace
    return merged(trace, {"colorbar": {"tickfont": font(scale), "title": {"font": font(scale)}}})


def _sent(value):
    """A numeric array as plotly sends it (base64 with its dtype and shape: NaN stays NaN, 8 bytes a float
    rather than ~20 characters), a text array as a list; anything else as it is."""
    if not isinstance(value, np.ndarray):
        return value
    return to_typed_array_spec(value) if value.dtype.kind in "fiub" else value.tolist()


@functools.cache
def _has_colorbar(kind: str) -> bool:
    """Whether a trace of this type has a colour bar (heatmap: yes; bar: no), asked of plotly once per type."""
    return "colorbar" in go.Figure({"data": [{"type": kind}]}).data[0]


def _room_for_row_labels(data: list[dict], layout: dict, size: int) -> int:
    """``common._room_for_row_labels`` on a spec."""
    heatmaps = [trace for trace in data if trace["type"] == "heatmap" and trace.get("y") is not None]
    if len(heatmaps) != 1 or (layout.get("yaxis") or {}).get("type") != "category":
        return 0
    return FRAME_PX + round(len(heatmaps[0]["y"]) * size * ROW_LABEL_SPACING)
