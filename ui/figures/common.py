"""Helpers shared by the figure functions, and the one place that sizes and colours figure text.

Every figure function ends with :func:`legible` (or builds its layout with :func:`projector_layout`
and :func:`axis_style`), which writes the tick, axis-title, title, legend, colour-bar and hover
fonts explicitly on the figure: at least 16 px and dark (#111, contrast 18.9:1 on white), so that
no Streamlit or plotly theme can shrink or grey them. Pages show figures with
``st.plotly_chart(fig, theme=None)``.

Presenter mode: ``legible(fig, scale=1.5)`` called again on any returned figure sets every one of
those fonts to ``scale`` times its base size (it sets sizes, it does not multiply them, so calling
it twice is safe). :func:`axis_style`, :func:`projector_layout` and :func:`panel_title` take the
same ``scale``. ``font_px(scale)`` is the base size for a scale.
"""

from __future__ import annotations

import base64
import html
import unicodedata

import numpy as np
import plotly.colors as pcolors
import plotly.graph_objects as go

# Large enough to read on a projector from the back row.
FONT_SIZE = 16
TEXT_COLOUR = "#111111"  # contrast 18.9:1 on white (WCAG AAA asks for 7:1)


def browser_scale(scale: str | list) -> list[list]:
    """A plotly colour scale (a name such as "Blues", or [[position, colour], ...]) as explicit
    ``[position, "rgb(r, g, b)"]`` stops.

    Streamlit's front end rewrites every "#000001" … "#000040" in a figure's JSON (its theme's
    placeholders), whatever the figure's theme: Inferno's first colour "#000004" reached the browser
    as violet "#ab63fa". ``rgb()`` strings are never rewritten, and a named scale is expanded here
    rather than by plotly.js."""
    stops = pcolors.get_colorscale(scale) if isinstance(scale, str) else scale
    return [[float(pos), _rgb_text(colour)] for pos, colour in stops]


def _rgb_text(colour: str) -> str:
    """'#rrggbb' -> 'rgb(r, g, b)'; any other colour text (rgb(), rgba()) unchanged."""
    if colour.startswith("#"):
        return "rgb({}, {}, {})".format(*pcolors.hex_to_rgb(colour))
    return colour


DIVERGING = browser_scale("RdBu")  # dark red -> white -> dark blue
SEQUENTIAL = browser_scale("Blues")  # white -> dark blue
_GRID = dict(gridcolor="#E5E7EB", zerolinecolor="#9CA3AF", linecolor="#6B7280", automargin=True)
# A small white template (plotly's "plotly_white" is ~10 KB of JSON in every figure sent to the browser).
TEMPLATE = dict(
    layout=dict(
        paper_bgcolor="white",
        plot_bgcolor="white",
        colorway=["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880"],
        xaxis=_GRID,
        yaxis=_GRID,
    )
)
CHAR_WIDTH = 0.58  # average glyph width of the UI font, in font sizes (for "does the label fit?")
WIDE_CHAR = 1.75  # a Hangul / CJK glyph (one em) in average Latin glyphs: 1 / CHAR_WIDTH, rounded up
SLANT_GAP, SLANT_GAP_WIDE = 1.7, 2.0  # font sizes between the ticks of labels slanted 45°
TITLE_STANDOFF = 16  # px; an explicit standoff of 0 still left the title 5 px into -90° labels


def font_px(scale: float = 1.0) -> int:
    """The base font size (px) of figure text at ``scale``."""
    return max(FONT_SIZE, round(FONT_SIZE * scale))


def font(scale: float = 1.0, extra: int = 0) -> dict:
    """A plotly font dict: ``font_px(scale) + extra`` pixels, dark."""
    return dict(size=font_px(scale) + extra, color=TEXT_COLOUR)


def escape(text: str) -> str:
    """Plotly renders a few HTML tags in labels and hover text: show user text literally."""
    return html.escape(text, quote=False)


def token_labels(tokens: list[str], start: int = 0) -> list[str]:
    """Unique, position-prefixed labels ('3:the'): plotly merges equal category labels."""
    return [f"{start + i}:{escape(tok)}" for i, tok in enumerate(tokens)]


def is_wide(char: str) -> bool:
    """A character about one em wide (Hangul, CJK): ``WIDE_CHAR`` average Latin characters."""
    return unicodedata.east_asian_width(char) in "WF"


def text_width(text: str) -> float:
    """``text``'s width in average Latin characters (a Hangul syllable counts ``WIDE_CHAR``)."""
    return sum(WIDE_CHAR if is_wide(c) else 1.0 for c in text)


def label_px(labels: list[str], scale: float = 1.0) -> float:
    """The width (px) of the widest of ``labels`` at the figure font."""
    return max((text_width(str(label)) for label in labels), default=0.0) * CHAR_WIDTH * font_px(scale)


def tick_angle(labels: list[str], width_px: float, scale: float = 1.0) -> int:
    """0 when every label fits under its own column of a ``width_px`` wide axis, else -45 (or -90
    when even a slanted label has no room). Labels are rotated only when they do not fit."""
    if not labels:
        return 0
    per_label = width_px / len(labels)
    if label_px(labels, scale) + 6 <= per_label:
        return 0
    # slanted labels need about 1.7 line heights between ticks not to run into each other; Hangul
    # and CJK glyphs fill the whole em box, so they need 2 (at 1.6 "0:배우들" touched "1:연기가")
    gap = SLANT_GAP_WIDE if any(is_wide(c) for label in labels for c in str(label)) else SLANT_GAP
    return -45 if per_label >= gap * font_px(scale) else -90


def axis_style(title: str | None, scale: float = 1.0, **extra) -> dict:
    """One axis with explicit, dark tick and title fonts large enough for a projector; the title
    ``TITLE_STANDOFF`` px from the tick labels (plotly's default put "key (column)" over labels turned -90°)."""
    return dict(
        title=dict(text=title, font=font(scale, 1), standoff=TITLE_STANDOFF),
        tickfont=font(scale),
        color=TEXT_COLOUR,
        **extra,
    )


def _without_none(value):
    """``value`` with every ``None`` in its dicts (and in dicts in lists of dicts or lists) left out, as
    validation would; lists of numbers or texts are not walked."""
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list) and value and isinstance(value[0], dict | list):  # not a list of numbers or texts
        return [_without_none(item) for item in value]
    return value


def plain_figure(traces: list[dict], layout: dict, *, encode_arrays: bool = False) -> go.Figure:
    """A figure of plain trace dicts (``type`` set) and a layout dict, without plotly's per-property
    validation (~4 ms of the ~5 ms a small heatmap takes to build). ``encode_arrays``: the traces'
    numeric numpy arrays are written once, here, as the typed arrays plotly.js reads
    (:func:`typed_array`), instead of being converted on building and again on every ``to_dict``
    (each conversion costs ~0.1 ms an array); the figure's traces then hold those dicts."""
    traces = _without_none(traces)
    if encode_arrays:
        traces = [{key: typed_array(value) for key, value in trace.items()} for trace in traces]
    return go.Figure({"data": traces, "layout": _without_none(layout)}, _validate=False)


_TYPED = {"float32": "f4", "float64": "f8", "int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2"}
_TYPED |= {"int32": "i4", "uint32": "u4"}
_INTS = (np.int8, np.int16, np.int32)


def typed_array(value):
    """A numeric numpy array as plotly.js's typed array ({"dtype", "bdata"[, "shape"]}, the bytes in
    base64: what plotly itself sends for it); any other value unchanged. int64 becomes the smallest
    of int8, int16, int32 that holds it, as plotly does."""
    if not isinstance(value, np.ndarray) or value.size == 0:
        return value
    if value.dtype == np.int64:
        low, high = value.min(), value.max()
        value = next((value.astype(t) for t in _INTS if np.iinfo(t).min <= low and high <= np.iinfo(t).max), value)
    code = _TYPED.get(str(value.dtype))
    if code is None:
        return value
    spec = {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(value)).decode("ascii")}
    if value.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in value.shape)
    return spec


def projector_layout(
    title: str, height: int, meta: str, title_size: int, margin: dict, scale: float = 1.0, **extra
) -> dict:
    """A whole figure layout as one dict, fonts large enough for a projector; ``extra`` adds or overrides keys.
    One dict because each plotly ``update_*`` call re-validates the figure, which is slow on a shared CPU."""
    layout = dict(
        title=dict(text=title, font=dict(size=max(title_size, font_px(scale) + 2), color=TEXT_COLOUR)),
        height=height,
        meta=meta,
        font=font(scale),
        margin=margin,
        hoverlabel=dict(font=dict(size=font_px(scale))),
        legend=dict(font=font(scale)),
        template=TEMPLATE,
    )
    layout.update(extra)
    return layout


def panel_title(text: str, x: float, y: float = 1.0, size: int = FONT_SIZE + 2, scale: float = 1.0) -> dict:
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
        font=dict(size=max(size, font_px(scale)), color=TEXT_COLOUR),
    )


def _axis_names(layout: go.Layout) -> list[str]:
    """The visible axes (hidden ones, such as the hundreds of a head grid, have no text to size)."""
    return [
        name
        for name in layout
        if name.startswith(("xaxis", "yaxis")) and layout[name] is not None and layout[name].visible is not False
    ]


def legible(fig: go.Figure, scale: float = 1.0) -> go.Figure:
    """Set every text font of ``fig`` explicitly (see the module docstring); returns ``fig``.

    One ``update_layout`` call for the layout (each call re-validates the whole figure), then the
    colour bars of the traces that have one."""
    size = font_px(scale)
    layout = fig.layout
    title_size = max(size + 4, (layout.title.font.size or 0) if layout.title.text else 0)
    update = dict(
        font=font(scale),
        title_font=dict(size=title_size, color=TEXT_COLOUR),
        hoverlabel=dict(font=dict(size=size)),
        legend=dict(font=font(scale)),
    )
    layout.template = TEMPLATE  # assigned, not merged: a merge would keep the default template's 7 KB
    for name in _axis_names(layout):
        update[name] = dict(tickfont=font(scale), title=dict(font=font(scale, 1)), color=TEXT_COLOUR)
    if any(_note_font(note, size) != _chosen_font(note) for note in layout.annotations):
        update["annotations"] = [
            {**note.to_plotly_json(), "font": _note_font(note, size)} for note in layout.annotations
        ]
    if scale > 1.0 and layout.height:
        room = _room_for_row_labels(fig, size)
        if 0 < room <= MAX_GROWN_HEIGHT:  # every row's label fits: grow to it and write each one
            update["height"] = max(layout.height, room)
            update["yaxis"] = {**update.get("yaxis", {}), "dtick": 1}
    fig.update_layout(update)
    for trace in fig.data:
        if "colorbar" in trace and getattr(trace, "showscale", None) is not False:
            trace.colorbar.tickfont = font(scale)
            trace.colorbar.title.font = font(scale)
    return fig


def at_font_scale(fig: go.Figure, scale: float) -> go.Figure:
    """``fig`` with its fonts at the presenter ``scale`` (:func:`legible`), unchanged at 1; returns ``fig``."""
    return legible(fig, scale) if scale != 1.0 else fig


ROW_LABEL_SPACING = 1.3  # rows this many font sizes apart: plotly then writes every row's label
FRAME_PX = 160  # title, key axis, its slanted labels and margins around a heatmap's rows
MAX_GROWN_HEIGHT = 900  # px: growing stops here (a long input's rows share the room, as without presenter mode)


def _room_for_row_labels(fig: go.Figure, size: int) -> int:
    """The height (px) at which a single heatmap with token rows (a category y axis) gives every row
    room for its label at font ``size``; 0 for any other figure. With larger fonts (presenter mode)
    plotly would otherwise leave out every second row label."""
    heatmaps = [trace for trace in fig.data if trace.type == "heatmap" and trace.y is not None]
    if len(heatmaps) != 1 or fig.layout.yaxis.type != "category":
        return 0
    return FRAME_PX + round(len(heatmaps[0].y) * size * ROW_LABEL_SPACING)


def _chosen_font(note) -> dict:
    return note.font.to_plotly_json() if note.font else {}


def _note_font(note, size: int) -> dict:
    """Annotation text: at least the base size; dark unless the figure chose a colour."""
    chosen = _chosen_font(note)
    return {**chosen, "size": max(size, chosen.get("size") or 0), "color": chosen.get("color") or TEXT_COLOUR}


def relative_luminance(colour: str) -> float:
    """WCAG relative luminance of '#rrggbb' or 'rgb(r, g, b)'."""
    if colour.startswith("#"):
        value = colour.lstrip("#")
        if len(value) == 3:
            value = "".join(c * 2 for c in value)
        channels = [int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    else:
        channels = [float(c) / 255 for c in colour[colour.index("(") + 1 : colour.index(")")].split(",")[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(foreground: str, background: str = "#ffffff") -> float:
    """WCAG contrast ratio (1 … 21) of two colours."""
    a, b = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (a + 0.05) / (b + 0.05)
