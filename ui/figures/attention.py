"""Figures of the Attention page: one head's heatmap, every head at a glance, token-to-token lines.

Pure functions: numpy in, ``plotly.graph_objects.Figure`` out; in a notebook, ``fig.show()``.
Sizes matter for inputs of up to 512 tokens: weights go to the browser as float32 arrays,
which plotly sends as binary (about 5 bytes a cell, against about 20 as JSON numbers), and the
all-heads grid goes as small palette PNG images. ``payload_bytes`` measures what a figure costs.
Time matters too (the page rebuilds the heatmap and the lines on every layer or head change): the
figures are made from plain dicts without plotly's per-property validation (:func:`plain_figure`),
with what validation would add written out (the expanded colour scale); a test checks that
validating them changes nothing in what is sent.
"""

from __future__ import annotations

import base64
import functools
import io

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from PIL import Image
from plotly.colors import sample_colorscale

from ui.i18n import translate

from .attention_lines import (  # noqa: F401 - the line view and the checks and sizes the figures share
    MAX_LINES,
    MIN_HEIGHT,
    ROW_PX,
    _layout,
    _line_pairs,
    _matrix,
    attention_lines,
    top_k_mask,
)
from .common import (
    FONT_SIZE,
    SEQUENTIAL,
    TEXT_COLOUR,
    axis_style,
    escape,
    font,
    label_px,
    plain_figure,
    tick_angle,
    token_labels,
)

MAX_HEATMAP_HEIGHT = 980
THUMB_PX = 64  # largest thumbnail side, in image pixels
THUMB_CELL_PX = 118  # displayed size of one thumbnail in the grid
SELECTED_COLOUR = "#C2410C"
MASKED_COLOUR = "#9ca3af"  # cells the look-ahead mask blocks: mid grey, unlike the scale's near-white 0
HEATMAP_WIDTH_PX = 510  # the heatmap figure's width at 1366 px (a screenshot; labels rotate when they do not fit)
AROUND_PLOT_PX = 130  # of that width: the colour bar with its title (~100) and the query-axis title (~30)


def _sequential_scale() -> list[list]:
    """The sequential scale as [position, "rgb(...)"] pairs (already expanded: plain figures skip validation)."""
    return SEQUENTIAL


def payload_bytes(fig: go.Figure) -> int:
    """Bytes of the figure's JSON as Streamlit sends it to the browser."""
    return len(pio.to_json(fig, validate=False).encode("utf-8"))


def attention_heatmap(
    weights: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str] | None = None,
    *,
    query_start: int = 0,
    key_start: int = 0,
    title: str = "Attention",
    zmax: float | None = None,
    value_name: str | None = None,
    meta: str = "attention-heatmap",
    width_px: float = HEATMAP_WIDTH_PX,
    lang: str = "en",
    blocked: np.ndarray | None = None,
) -> go.Figure:
    """weights (Tq, Tk): query tokens as rows (top to bottom), key tokens as columns; hover gives
    the pair and the weight. ``query_start``/``key_start`` are the positions of the first row and
    column in the input (for a window of a long input). Colours run from 0 to ``zmax`` (default:
    the largest weight shown, so that the small weights of a long input still show). Key labels are
    turned only when they do not fit ``width_px``. ``blocked`` (Tq, Tk) bool: cells the look-ahead mask
    blocks, drawn as masked (the figure's grey, no colour and no hover), never as a weight of 0."""
    w = _matrix(weights)
    value_name = translate("figures.weight", lang) if value_name is None else value_name
    query, key = translate("figures.query", lang), translate("figures.key", lang)
    key_tokens = query_tokens if key_tokens is None else key_tokens
    if w.shape != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"weights {w.shape} do not fit {len(query_tokens)} query and {len(key_tokens)} key tokens.")
    top = float(zmax) if zmax is not None else max(float(w.max(initial=0.0)), 1e-6)
    x_labels, y_labels = token_labels(key_tokens, key_start), token_labels(query_tokens, query_start)
    plot_px = max(width_px - label_px(y_labels) - AROUND_PLOT_PX, 100.0)  # the query labels take their width
    if blocked is not None:
        w = np.where(np.asarray(blocked, dtype=bool), np.float32(np.nan), w)
    heat = dict(
        type="heatmap",
        z=w,
        hoverongaps=False,
        x=x_labels,
        y=y_labels,
        zmin=0.0,
        zmax=top,
        colorscale=_sequential_scale(),
        colorbar=dict(title=dict(text=value_name, font=font()), tickfont=font(), thickness=16),
        hovertemplate=f"{query} %{{y}}<br>{key} %{{x}}<br>{escape(value_name)} %{{z:.4f}}<extra></extra>",
    )
    yaxis = axis_style(translate("figures.query_rows", lang), autorange="reversed", type="category", automargin=True)
    xaxis = axis_style(
        translate("figures.key_columns", lang),
        type="category",
        tickangle=tick_angle(x_labels, plot_px),
        automargin=True,
        side="bottom",
    )
    height = int(np.clip(160 + ROW_PX * w.shape[0], MIN_HEIGHT, MAX_HEATMAP_HEIGHT))
    masked = {} if blocked is None else {"plot_bgcolor": MASKED_COLOUR}
    layout = _layout(title, height, meta, xaxis=xaxis, yaxis=yaxis, **masked)
    return plain_figure([heat], layout, encode_arrays=True)


def _pool_max(w: np.ndarray, size: int) -> np.ndarray:
    """(..., T_q, T_k) -> (..., ceil(T_q/k), ceil(T_k/k)) with k = ceil(max(T_q, T_k)/size): each
    pixel is its block's maximum, so a single strong weight stays visible in a thumbnail. Weights
    are >= 0, so the zeros that pad a side to a multiple of k change no maximum. A maximum of
    k strided slices per axis (contiguous passes; ~40x faster than a max over reshaped block axes)."""
    k = max(1, -(-max(w.shape[-2:]) // size))
    rows, cols = -(-w.shape[-2] // k), -(-w.shape[-1] // k)
    if (rows * k, cols * k) != w.shape[-2:]:
        padded = np.zeros((*w.shape[:-2], rows * k, cols * k), dtype=w.dtype)
        padded[..., : w.shape[-2], : w.shape[-1]] = w
        w = padded
    out = w[..., 0::k, :]
    for i in range(1, k):
        out = np.maximum(out, w[..., i::k, :])
    pooled = out[..., 0::k]
    for i in range(1, k):
        pooled = np.maximum(pooled, out[..., i::k])
    return pooled


@functools.cache  # a constant: the same table for every call and every session
def _colour_table() -> np.ndarray:
    """(256, 3) uint8: the sequential colour scale as a lookup table."""
    colours = sample_colorscale(SEQUENTIAL, [i / 255 for i in range(256)])
    return np.array([[int(float(c)) for c in s[s.index("(") + 1 : -1].split(",")] for s in colours], dtype=np.uint8)


@functools.cache  # a constant
def _palette() -> bytes:
    """The colour table as a PNG palette (256 RGB triples)."""
    return _colour_table().tobytes()


def thumbnail_png(weights: np.ndarray, size: int = THUMB_PX) -> bytes:
    """One head (T, T) as a PNG of at most ``size`` × ``size`` pixels, scaled to its own maximum."""
    return _png(_levels(_pool_max(_matrix(weights), size)))


def _levels(pooled: np.ndarray) -> np.ndarray:
    """(..., r, c) weights -> uint8 colour levels 0..255, each (r, c) image scaled to its own maximum."""
    top = pooled.max(axis=(-2, -1), keepdims=True, initial=0.0)
    scaled = np.divide(pooled, top, out=np.zeros_like(pooled, dtype=np.float32), where=top > 0)
    return np.round(scaled * 255).astype(np.uint8)


def _png(levels: np.ndarray, clear_zero: bool = False) -> bytes:
    """(r, c) colour levels as a palette PNG: the same pixels as an RGB image of the colour table
    (the browser looks each level up in the palette), a third of the bytes to encode and to send.
    ``clear_zero``: level 0 (the palest blue, #f7fbff) is transparent, white on the figure's page."""
    image = Image.fromarray(np.ascontiguousarray(levels), mode="L")
    image.putpalette(_palette())
    buffer = io.BytesIO()
    extra = {"transparency": 0} if clear_zero else {}
    image.save(buffer, format="PNG", compress_level=1, **extra)  # 2 % more bytes than level 6, ~25 % less time
    return buffer.getvalue()


def head_grid(
    attention: np.ndarray,
    selected: tuple[int, int] | None = None,
    *,
    title: str | None = None,
    size: int = THUMB_PX,
    meta: str = "attention-grid",
    lang: str = "en",
    first_layer: int = 0,
) -> go.Figure:
    """attention (L, H, T_q, T_k) -> an L × H grid of PNG thumbnails (row = layer, column = head),
    each scaled to its own maximum; ``selected`` (layer, head), 0-based, is outlined. Every thumbnail
    lies on one hidden axis pair, one thumbnail pixel per unit (:func:`grid_cell`): one pair of
    axes instead of one per head, which plotly builds and the browser lays out much faster. The last
    trace is an invisible marker over each thumbnail whose ``customdata`` is [layer, head] (0-based):
    a click on it (``st.plotly_chart(on_select=...)``) says which head to open large. ``first_layer``
    (0-based): the layer of the first row, when the grid shows a window of a deep model's layers (the
    titles and the click targets name the model's layers; ``selected`` counts from the window's first).

    Each layer is pooled on its own: the thumbnails never need a copy of all the weights at once."""
    a = np.asarray(attention)
    if a.ndim != 4 or 0 in a.shape:
        raise ValueError(f"attention must be (layers, heads, T, T) with at least one head; got shape {a.shape}.")
    layers, heads = a.shape[:2]
    levels = np.stack([_levels(_pool_max(_matrix_stack(a[layer]), size)) for layer in range(layers)])  # (L, H, r, c)
    sides = levels.shape[-2:]
    png = base64.b64encode(_png(_mosaic(levels), clear_zero=True)).decode("ascii")
    # one image of every thumbnail (one PNG to encode and decode, not L × H); the gutters are level 0,
    # transparent: the page's white shows between the thumbnails
    traces = [dict(type="image", source=f"data:image/png;base64,{png}", x0=0, y0=0, hoverinfo="skip")]
    compact = heads >= COMPACT_FROM_HEADS
    notes = (
        _row_and_column_titles(layers, heads, sides, first_layer)
        if compact
        else _cell_titles(layers, heads, sides, lang, first_layer)
    )
    overlay = _click_targets(layers, heads, sides, lang, first_layer)
    title = translate("figures.grid_title", lang) if title is None else title
    width, depth = _grid_extent(layers, heads, sides)
    left = -0.5 - GUTTER / 2 - (ROW_TITLE_ROOM * max(sides) if compact else 0)
    top = -0.5 - TITLE_ROOM * max(sides)
    # one data unit is as tall as it is wide: as tall as the grid is when it fills a laptop's column
    height = 70 + round(min(THUMB_CELL_PX * layers, GRID_COLUMN_PX * (depth - top) / (width - left)))
    axes = dict(
        xaxis=dict(visible=False, range=[left, width], fixedrange=True, constrain="domain"),
        yaxis=dict(
            visible=False,
            range=[depth, top],  # reversed: the first layer on top
            fixedrange=True,
            scaleanchor="x",
            constrain="domain",
        ),
    )
    layout = _layout(title, height, meta, annotations=notes, clickmode="event+select", dragmode=False, **axes)
    fig = plain_figure([*traces, overlay], layout)
    return select_head(fig, selected, a.shape)


GUTTER = 0.25  # gap between thumbnails, in thumbnail sides
TITLE_ROOM = 0.35  # room above each thumbnail for its 'L1 H1' title, in thumbnail sides
GRID_COLUMN_PX = 340  # the grid's column on the Attention page at 1366 px (wider screens: the height bounds it)
# From this many heads a row (a BERT's 12) has no room for 'L10 H10' over each thumbnail: the columns are
# titled once ('H1', '2' …) and the rows at their left ('L1' …), with this much room (in thumbnail sides).
COMPACT_FROM_HEADS = 9
ROW_TITLE_ROOM = 1.4


def _cell_titles(layers: int, heads: int, sides: tuple[int, int], lang: str, first: int = 0) -> list[dict]:
    """An 'L1 H1' title over every thumbnail."""
    notes = []
    for layer in range(layers):
        for head in range(heads):
            x0, y0, x1, _ = grid_cell(layer, head, sides)
            text = translate("figures.grid_cell", lang, layer=first + layer + 1, head=head + 1)
            notes.append(_cell_title(text, (x0 + x1) / 2, y0 - 0.5))
    return notes


def _row_and_column_titles(layers: int, heads: int, sides: tuple[int, int], first: int = 0) -> list[dict]:
    """'H1', '2', … over the first row's thumbnails and 'L1' … at the left of each row (wide grids)."""
    notes = []
    for head in range(heads):
        x0, y0, x1, _ = grid_cell(0, head, sides)
        notes.append(_cell_title(f"H{head + 1}" if head == 0 else str(head + 1), (x0 + x1) / 2, y0 - 0.5))
    for layer in range(layers):
        x0, y0, _, y1 = grid_cell(layer, 0, sides)
        note = _cell_title(f"L{first + layer + 1}", x0 - 0.5 - GUTTER * max(sides) / 2, (y0 + y1) / 2)
        notes.append({**note, "xanchor": "right", "yanchor": "middle"})
    return notes


def _steps(sides: tuple[int, int]) -> tuple[int, int]:
    """(rows, columns) of pixels from one thumbnail's top left corner to the next one's."""
    side = max(sides)
    return round(side * (1 + GUTTER + TITLE_ROOM)), round(side * (1 + GUTTER))


def grid_cell(layer: int, head: int, sides: tuple[int, int]) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1): the first and last pixel of thumbnail (layer, head) in the grid's image and
    data coordinates (one unit a pixel, y downwards), for thumbnails of ``sides`` (rows, columns)."""
    row_step, column_step = _steps(sides)
    x0, y0 = head * column_step, layer * row_step
    return x0, y0, x0 + sides[1] - 1, y0 + sides[0] - 1


def _mosaic(levels: np.ndarray) -> np.ndarray:
    """(L, H, r, c) colour levels -> one (rows, columns) image with every thumbnail at its
    :func:`grid_cell`, level 0 (the palest colour, as a weight of 0) between them."""
    layers, heads, r, c = levels.shape
    _, _, x1, y1 = grid_cell(layers - 1, heads - 1, (r, c))
    canvas = np.zeros((y1 + 1, x1 + 1), dtype=np.uint8)
    for layer in range(layers):
        for head in range(heads):
            x0, y0, _, _ = grid_cell(layer, head, (r, c))
            canvas[y0 : y0 + r, x0 : x0 + c] = levels[layer, head]
    return canvas


def _grid_extent(layers: int, heads: int, sides: tuple[int, int]) -> tuple[float, float]:
    """The largest x and y (data units) the grid's axes show."""
    _, _, x1, y1 = grid_cell(layers - 1, heads - 1, sides)
    return x1 + 0.5 + GUTTER * max(sides) / 2, y1 + 0.5 + GUTTER * max(sides) / 2


def _cell_title(text: str, x: float, y: float) -> dict:
    """A thumbnail's 'L1 H1' title, just above its top edge ``y`` (data coordinates)."""
    font = dict(size=FONT_SIZE, color=TEXT_COLOUR)
    return dict(text=text, x=x, y=y, xref="x", yref="y", yanchor="bottom", showarrow=False, font=font)


def _matrix_stack(attention: np.ndarray) -> np.ndarray:
    """(L, H, T_q, T_k) as finite float32 (``_matrix`` for every head at once)."""
    a = np.asarray(attention, dtype=np.float32)
    if not np.isfinite(a).all():
        raise ValueError("weights has NaN or infinite entries.")
    return a


def select_head(grid: go.Figure, selected: tuple[int, int] | None, shape: tuple[int, ...], size: int = THUMB_PX):
    """Outline head ``selected`` (layer, head), 0-based, of a :func:`head_grid` figure made from
    attention of ``shape`` (L, H, T_q, T_k); None: no outline. Changes ``grid`` and returns it, so a
    grid kept for one input only moves its outline when another head is chosen."""
    if selected is not None:
        grid.layout.shapes = (_outline(selected, _thumb_sides(shape[-2:], size)),)
    elif grid.layout.shapes:
        grid.layout.shapes = ()
    return grid


def _click_targets(layers: int, heads: int, sides: tuple[int, int], lang: str, first: int = 0) -> dict:
    """One transparent marker at the centre of each thumbnail, on the thumbnails' axes; its hover
    names the head."""
    xs, ys, data, names = [], [], [], []
    for layer in range(layers):
        for head in range(heads):
            x0, y0, x1, y1 = grid_cell(layer, head, sides)
            xs.append((x0 + x1) / 2)
            ys.append((y0 + y1) / 2)
            data.append([first + layer, head])
            names.append(translate("figures.grid_hover", lang, layer=first + layer + 1, head=head + 1))
    marker_px = int(0.8 * min(THUMB_CELL_PX - 24, 900 / max(heads, 1)))
    hover = translate("figures.grid_click", lang)
    return dict(
        type="scatter",
        x=xs,
        y=ys,
        mode="markers",
        customdata=data,
        text=names,
        marker=dict(size=marker_px, symbol="square", color="rgba(0,0,0,0)"),
        hovertemplate="%{text}<br>" + hover + "<extra></extra>",
        showlegend=False,
        name="open",
    )


def clicked_head(selection: dict | None) -> tuple[int, int] | None:
    """(layer, head), 0-based, of the thumbnail clicked in :func:`head_grid`'s figure, from the
    selection state ``st.plotly_chart(on_select=...)`` keeps; None when nothing was clicked."""
    points = ((selection or {}).get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, list | tuple) and len(custom) == 2:
            return int(custom[0]), int(custom[1])
    return None


def _thumb_sides(shape: tuple[int, int], size: int) -> tuple[int, int]:
    """(rows, columns) of pixels of the thumbnail of a (T_q, T_k) head (see ``_pool_max``)."""
    k = max(1, -(-max(shape) // size))
    return -(-shape[0] // k), -(-shape[1] // k)


def _outline(selected: tuple[int, int], sides: tuple[int, int]) -> dict:
    """A frame around thumbnail ``selected`` (layer, head); its pixels span x0 - 0.5 .. x1 + 0.5."""
    x0, y0, x1, y1 = grid_cell(*selected, sides)
    pad = 0.5 + max(sides) / 30
    return dict(
        type="rect",
        xref="x",
        yref="y",
        x0=x0 - pad,
        y0=y0 - pad,
        x1=x1 + pad,
        y1=y1 + pad,
        line=dict(color=SELECTED_COLOUR, width=4),
    )


def encoder_decoder_blocks(encoder: np.ndarray, cross: np.ndarray, decoder: np.ndarray) -> np.ndarray:
    """One (T_s + T_t) square matrix over source then target tokens, rows = queries, columns = keys:
    [encoder self (T_s, T_s) | 0 ; cross (T_t, T_s) | decoder self (T_t, T_t)]. The source never
    looks at the target, so the top-right block is 0."""
    enc, crs, dec = (np.asarray(m, dtype=np.float32) for m in (encoder, cross, decoder))
    ts, tt = enc.shape[0], dec.shape[0]
    if enc.shape != (ts, ts) or dec.shape != (tt, tt) or crs.shape != (tt, ts):
        raise ValueError(f"blocks do not fit: encoder {enc.shape}, cross {crs.shape}, decoder {dec.shape}.")
    out = np.zeros((ts + tt, ts + tt), dtype=np.float32)
    out[:ts, :ts], out[ts:, :ts], out[ts:, ts:] = enc, crs, dec
    return out
