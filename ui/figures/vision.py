"""Figures of the Vision page: the picture, attention over it, the layer × head grid, masks,
position-embedding similarity and patch-embedding filters.

Pure functions: numpy in, ``plotly.graph_objects.Figure`` out (``fig.show()`` in a notebook).
Every text is set at 16 px or more in #111 on each figure: Streamlit's theme would otherwise
pick smaller, lighter fonts.
"""

from __future__ import annotations

import textwrap
from html import escape as escape_html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.figures.common import DIVERGING, browser_scale
from ui.i18n import translate

FONT_PX = 16
DARK = "#111111"
HEAT = browser_scale("Inferno")  # black -> yellow
MASK_COLOURS = ("#E5E7EB", "#DC2626", "#2563EB", "#16A34A", "#F59E0B", "#7C3AED")


def _font(extra: int = 0) -> dict:
    return dict(size=FONT_PX + extra, color=DARK)


def _axis(title: str | None = None, **extra) -> dict:
    return dict(
        title=dict(text=title, font=_font(1)),
        tickfont=_font(),
        color=DARK,
        showgrid=False,
        zeroline=False,
        **extra,
    )


def _finish(fig: go.Figure, title: str, meta: str, height: int, **extra) -> go.Figure:
    """One layout update: title, fonts, hover text, size; image axes keep square pixels."""
    axes = {name: _axis(fig.layout[name].title.text) for name in fig.layout if name.startswith(("xaxis", "yaxis"))}
    fig.update_layout(
        title=dict(text=title, font=_font(4)),
        font=_font(),
        hoverlabel=dict(font=dict(size=FONT_PX)),
        legend=dict(font=_font()),
        meta=meta,
        height=height,
        margin=extra.pop("margin", dict(l=10, r=10, t=70, b=10)),
        template="plotly_white",
        **axes,
        **extra,
    )
    for trace in fig.data:
        if getattr(trace, "colorbar", None) is not None and getattr(trace, "showscale", True) is not False:
            trace.colorbar.tickfont = _font()
    return fig


def to_rgb(image: np.ndarray) -> np.ndarray:
    """(C, H, W) floats in [0, 1], C = 1 or 3 -> (H, W, 3) uint8."""
    x = np.asarray(image, dtype=np.float32)
    if x.ndim != 3 or x.shape[0] not in (1, 3):
        raise ValueError(f"An image must be (1 or 3, H, W); got shape {x.shape}.")
    if x.shape[0] == 1:
        x = np.repeat(x, 3, axis=0)
    return (np.clip(x, 0, 1) * 255).round().astype(np.uint8).transpose(1, 2, 0)


def _image_trace(image: np.ndarray) -> go.Image:
    return go.Image(z=to_rgb(image), hoverinfo="skip")


def _grid_heat(weights: np.ndarray, patch: int, opacity: float, lang: str, show_scale: bool = True) -> go.Heatmap:
    g = weights.shape[0]
    return go.Heatmap(
        z=np.asarray(weights, dtype=np.float32),
        x0=(patch - 1) / 2,
        dx=patch,
        y0=(patch - 1) / 2,
        dy=patch,
        colorscale=HEAT,
        opacity=opacity,
        zmin=0,
        showscale=show_scale,
        customdata=np.stack(np.meshgrid(np.arange(g), np.arange(g))[::-1], axis=-1) + 1,
        hovertemplate=translate("vision.hover_patch", lang) + "<extra></extra>",
    )


TITLE_CHARS = 26  # per line of a figure title in a third of the page at 1366 px (20 px font)


def wrap_title(title: str, chars: int = TITLE_CHARS) -> str:
    """``title`` in lines of at most ``chars`` characters (plotly cuts a title that does not fit);
    a word longer than a line (a file name) is cut into pieces."""
    lines = textwrap.wrap(title, chars, break_long_words=True, break_on_hyphens=False)
    return "<br>".join(escape_html(line) for line in lines) if lines else ""


def image_figure(image: np.ndarray, title: str, meta: str = "vision-image", height: int = 360) -> go.Figure:
    """The picture the model saw, (C, H, W) in [0, 1]; a long title (a file name) is wrapped."""
    fig = go.Figure(_image_trace(image))
    wrapped = wrap_title(title)
    fig = _finish(fig, wrapped, meta, height + 24 * wrapped.count("<br>"))
    fig.update_xaxes(showticklabels=False)
    return fig.update_yaxes(showticklabels=False)


def attention_overlay(
    image: np.ndarray,
    weights: np.ndarray,
    patch: int,
    title: str,
    opacity: float = 0.6,
    lang: str = "en",
    meta: str = "vision-overlay",
    height: int = 460,
    marked: tuple[int, int] | None = None,
    clickable: bool = False,
) -> go.Figure:
    """weights (grid, grid) drawn over the picture (C, H, W), each cell covering its p × p patch;
    ``marked`` (row, col) outlines one patch (the query). ``clickable``: a click on a patch selects it
    (``st.plotly_chart(on_select=...)``; read it with :func:`clicked_patch`)."""
    if np.asarray(image).shape[0] == 1:
        # A grey picture is drawn as its ink over the opaque attention colours: where there is no ink the
        # colour is exactly the colour bar's (inferno at 60 % over a black background did not match it).
        traces = [_grid_heat(weights, patch, 1.0, lang), _ink_trace(image, opacity, lang)]
    else:
        traces = [_image_trace(image), _grid_heat(weights, patch, opacity, lang)]
    if clickable:
        traces.append(_patch_targets(weights, patch, height, lang))
    fig = go.Figure(traces)
    if marked is not None:
        r, c = marked
        fig.add_shape(
            type="rect",
            x0=c * patch - 0.5,
            x1=(c + 1) * patch - 0.5,
            y0=r * patch - 0.5,
            y1=(r + 1) * patch - 0.5,
            line=dict(color="#22D3EE", width=4),
        )
    # A click anywhere over the picture picks the nearest patch centre (hoverdistance -1: no limit).
    extra = dict(clickmode="event+select", dragmode=False, hovermode="closest", hoverdistance=-1) if clickable else {}
    fig = _finish(fig, title, meta, height, **extra)
    size_y, size_x = np.asarray(image).shape[1:]
    # Fixed ranges: autorange would pad them for the click markers and shrink the picture.
    fig.update_xaxes(showticklabels=False, range=[-0.5, size_x - 0.5], scaleanchor="y", constrain="domain")
    return fig.update_yaxes(showticklabels=False, range=[size_y - 0.5, -0.5], constrain="domain")


def _ink_trace(image: np.ndarray, opacity: float, lang: str) -> go.Heatmap:
    """A grey picture (1, H, W) as white ink whose alpha follows the pixel (a heatmap, so that it is drawn
    over the attention heatmap): where the picture is black it is transparent."""
    ink = np.clip(np.asarray(image, dtype=np.float32)[0], 0, 1)
    strongest = max(0.35, 1.0 - opacity)
    return go.Heatmap(
        z=ink,
        zmin=0,
        zmax=1,
        colorscale=[[0, "rgba(255,255,255,0)"], [1, f"rgba(255,255,255,{strongest:.2f})"]],
        showscale=False,
        hoverinfo="skip",
        name=translate("vision.ink", lang),
    )


def _patch_targets(weights: np.ndarray, patch: int, height: int, lang: str) -> go.Scatter:
    """A transparent marker over each patch of ``weights`` (grid, grid), carrying (row, col, row + 1,
    col + 1, weight): a cell of an image is not a selectable point. It takes the hover, so it shows the weight."""
    grid = weights.shape[0]
    rows, cols = np.divmod(np.arange(grid * grid), grid)
    return go.Scatter(
        x=cols * patch + (patch - 1) / 2,
        y=rows * patch + (patch - 1) / 2,
        mode="markers",
        customdata=np.stack([rows, cols, rows + 1, cols + 1, np.asarray(weights, np.float64).reshape(-1)], 1).tolist(),
        marker=dict(symbol="square", size=8, color="rgba(0,0,0,0)"),
        hovertemplate=translate("vision.hover_click_patch", lang) + "<extra></extra>",
        showlegend=False,
        name="patch",
    )


def clicked_patch(state) -> tuple[int, int] | None:
    """(row, col), 0-based, of the patch clicked in a ``clickable`` :func:`attention_overlay`."""
    points = ((state or {}).get("selection") or {}).get("points") or []
    for point in points:
        custom = point.get("customdata")
        if isinstance(custom, dict):  # a typed array comes back from the browser as {"0": .., "1": ..}
            custom = [custom[k] for k in sorted(custom, key=int)]
        if isinstance(custom, list | tuple) and len(custom) >= 2:
            return int(custom[0]), int(custom[1])
    return None


def head_grid(maps: np.ndarray, image: np.ndarray, patch: int, lang: str = "en", selected=None) -> go.Figure:
    """maps (L, H, grid, grid) -> one small overlay per layer (rows) and head (columns);
    ``selected`` (layer, head) is outlined. Each panel has its own colour range."""
    layers, heads = maps.shape[:2]
    titles = [translate("vision.grid_cell", lang, layer=i + 1, head=j + 1) for i in range(layers) for j in range(heads)]
    fig = make_subplots(layers, heads, subplot_titles=titles, horizontal_spacing=0.02, vertical_spacing=0.05)
    for i in range(layers):
        for j in range(heads):
            fig.add_trace(_image_trace(image), i + 1, j + 1)
            fig.add_trace(_grid_heat(maps[i, j] / max(maps[i, j].max(), 1e-9), patch, 0.65, lang, False), i + 1, j + 1)
    if selected is not None:
        n = selected[0] * heads + selected[1] + 1
        fig.add_shape(
            type="rect",
            xref=f"x{n} domain",
            yref=f"y{n} domain",
            x0=0,
            x1=1,
            y0=0,
            y1=1,
            line=dict(color="#22D3EE", width=5),
        )
    fig = _finish(fig, translate("vision.grid_title", lang), "vision-head-grid", 170 * layers + 80)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    for note in fig.layout.annotations:
        note.font = _font()
    return fig


SHAPE_KEYS = {  # the shape model's class names as the reader's language writes them
    "background": "vision.shape_background",
    "circle": "vision.shape_circle",
    "square": "vision.shape_square",
    "triangle": "vision.shape_triangle",
}


def shown_labels(labels, lang: str) -> list[str]:
    """Class names in ``lang``: the shape classes translated, any other name (digits, an imported
    model's labels) as the model gives it."""
    return [translate(SHAPE_KEYS[name], lang) if name in SHAPE_KEYS else name for name in labels]


def probability_bars(
    probabilities: np.ndarray,
    labels: tuple[str, ...],
    lang: str = "en",
    compare: np.ndarray | None = None,
    meta: str = "vision-probabilities",
) -> go.Figure:
    """probabilities (K,) as bars; ``compare`` (K,) adds a second bar per class (after switch-off)."""
    labels = shown_labels(labels, lang)
    fig = go.Figure(
        go.Bar(
            x=list(labels),
            y=np.asarray(probabilities, dtype=float),
            name=translate("vision.prob_model", lang),
            marker_color="#2563EB",
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    )
    if compare is not None:
        fig.add_trace(
            go.Bar(
                x=list(labels),
                y=np.asarray(compare, dtype=float),
                name=translate("vision.prob_ablated", lang),
                marker_color="#F59E0B",
                hovertemplate="%{x}: %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        xaxis_title=translate("vision.axis_class", lang),
        yaxis_title=translate("vision.axis_probability", lang),
        barmode="group",
    )
    fig = _finish(fig, translate("vision.prob_title", lang), meta, 360)
    # class names "0".."9" would make a numeric axis, which labels every second one at projector sizes:
    # a category axis with every name as a tick
    fig.update_xaxes(type="category", tickmode="array", tickvals=list(labels), ticktext=list(labels))
    return fig.update_yaxes(range=[0, 1])


def mask_pair(
    predicted: np.ndarray,
    true: np.ndarray | None,
    labels: tuple[str, ...],
    lang: str = "en",
    meta: str = "vision-masks",
    right_title: str | None = None,
) -> go.Figure:
    """Predicted mask (H, W) of class ids beside the true one (when known), one colour per class."""
    labels = shown_labels(labels, lang)
    panels = [(predicted, translate("vision.mask_predicted", lang))]
    if true is not None:
        panels.append((true, right_title or translate("vision.mask_true", lang)))
    fig = make_subplots(1, len(panels), subplot_titles=[p[1] for p in panels], horizontal_spacing=0.06)
    k = len(labels)
    colours = [MASK_COLOURS[i % len(MASK_COLOURS)] for i in range(k)]
    scale = [[v, colours[i]] for i in range(k) for v in (i / k, (i + 1) / k)]
    for col, (mask, _) in enumerate(panels, start=1):
        fig.add_trace(
            go.Heatmap(
                z=np.asarray(mask, dtype=np.int16),
                zmin=-0.5,
                zmax=k - 0.5,
                colorscale=scale,
                showscale=col == len(panels),
                customdata=np.asarray(labels, dtype=object)[mask],
                hovertemplate="%{customdata}<extra></extra>",
                colorbar=dict(tickvals=list(range(k)), ticktext=list(labels)),
            ),
            1,
            col,
        )
    fig = _finish(fig, translate("vision.mask_title", lang), meta, 420)
    fig.update_xaxes(showticklabels=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, autorange="reversed", constrain="domain")
    for n in range(1, len(panels) + 1):  # square pixels in each panel (a 32 x 32 mask was 180 x 340 px)
        suffix = "" if n == 1 else str(n)
        fig.layout[f"xaxis{suffix}"].scaleanchor = f"y{suffix}"
    for note in fig.layout.annotations:
        note.font = _font()
    return fig


def similarity_figure(mosaic: np.ndarray, grid: int, lang: str = "en") -> go.Figure:
    """The mosaic from ``maps.similarity_mosaic``: tile (r, c) is patch (r, c)'s cosine similarity
    with every patch position."""
    fig = go.Figure(
        go.Heatmap(
            z=mosaic,
            colorscale=browser_scale("Viridis"),
            zmin=-1,
            zmax=1,
            hoverongaps=False,
            hovertemplate=translate("vision.hover_similarity", lang) + "<extra></extra>",
        )
    )
    step = grid + 1
    ticks = [i * step + (grid - 1) / 2 for i in range(grid)]
    fig.update_layout(
        xaxis=dict(
            tickvals=ticks, ticktext=[str(i + 1) for i in range(grid)], title=translate("vision.axis_col", lang)
        ),
        yaxis=dict(
            tickvals=ticks, ticktext=[str(i + 1) for i in range(grid)], title=translate("vision.axis_row", lang)
        ),
    )
    fig = _finish(fig, translate("vision.similarity_title", lang), "vision-position-similarity", 560)
    return fig.update_yaxes(autorange="reversed", scaleanchor="x")


TITLE_ROOM = 150  # px above the filters: a two-line title (about 60 px) and the two-line PC labels (about 45)


def filters_figure(components: np.ndarray, explained: np.ndarray, lang: str = "en") -> go.Figure:
    """components (k, C, p, p) -> one small image each (grey for C = 1; RGB scaled per component
    for C = 3), titled with the share of variance explained."""
    k = len(components)
    cols = min(k, 5)  # seven across half the page ran the titles into each other ("PC1 (18 %)PC2 (13 %)")
    rows = int(np.ceil(k / cols))
    titles = [translate("vision.filter_title", lang, n=i + 1, share=100 * explained[i]) for i in range(k)]
    fig = make_subplots(rows, cols, subplot_titles=titles, horizontal_spacing=0.04, vertical_spacing=0.5 / rows)
    for i, comp in enumerate(components):
        r, c = divmod(i, cols)
        if comp.shape[0] == 1:
            trace = go.Heatmap(z=comp[0], colorscale=DIVERGING, zmid=0, showscale=False, hoverinfo="skip")
        else:
            span = max(np.abs(comp).max(), 1e-9)
            trace = go.Image(z=((comp / span + 1) / 2 * 255).astype(np.uint8).transpose(1, 2, 0), hoverinfo="skip")
        fig.add_trace(trace, r + 1, c + 1)
    title = wrap_title(translate("vision.filters_title", lang), 34)  # whole, on two lines if need be
    # the title at the very top and a margin below it that holds the first row's two-line "PC1 / 18 %"
    # labels: with the title centred in a 100-px margin the two ran into each other
    fig = _finish(fig, title, "vision-filters", 150 * rows + 180, margin=dict(l=10, r=10, t=TITLE_ROOM, b=10))
    fig.update_layout(title=dict(yref="container", y=1, yanchor="top", pad=dict(t=8)))
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    for note in fig.layout.annotations:
        note.font = _font()
    return fig
