"""Figures of the Positional encoding page: numpy in, ``plotly.graph_objects.Figure`` out.

Large tables are thinned (every k-th row / column) before drawing so that a 2048 × 1024
encoding stays a figure a browser can draw at once; :func:`thinning` says by how much.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.i18n import translate

from .common import DIVERGING, FONT_SIZE, axis_style, legible, panel_title, projector_layout, tick_angle

MAX_HEATMAP_ROWS = 512
MAX_HEATMAP_COLS = 256
MAX_SIMILARITY = 400
CURVE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


def thinning(n: int, limit: int) -> int:
    """The stride (1, 2, 3, ...) that keeps at most ``limit`` of ``n`` rows."""
    return max(1, -(-n // max(1, limit)))


def ordinal(n: int) -> str:
    """2 -> '2nd', 3 -> '3rd', 4 -> '4th', 11 -> '11th', 22 -> '22nd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def every_nth(n: int, what: str, lang: str = "en") -> str:
    """'every 4th position' ('what' is 'position' or 'dimension')."""
    key = "figures.every_nth_position" if what == "position" else "figures.every_nth_dimension"
    return translate(key, lang, nth=ordinal(n) if lang == "en" else n)  # '4th' is English only


def thinned_axes(length: int, d_model: int, lang: str = "en") -> str:
    """What :func:`encoding_heatmap` draws of a (length, d_model) table, e.g. 'every 4th position'; '' for all."""
    rs, cs = thinning(length, MAX_HEATMAP_ROWS), thinning(d_model, MAX_HEATMAP_COLS)
    parts = [every_nth(rs, "position", lang)] * (rs > 1) + [every_nth(cs, "dimension", lang)] * (cs > 1)
    return ", ".join(parts)


def _layout(title: str, height: int, meta: str, x_title: str | None, y_title: str | None, **extra) -> dict:
    """One layout dict (each plotly ``update_*`` call re-validates the figure, which is slow on a shared CPU).
    ``xaxis`` / ``yaxis`` in ``extra`` add to the axes' settings."""
    xaxis = axis_style(x_title, **extra.pop("xaxis", {}))
    yaxis = axis_style(y_title, **extra.pop("yaxis", {}))
    margin = dict(l=70, r=30, t=70 + 25 * title.count("<br>"), b=60)  # room for every line of the title
    return projector_layout(title, height, meta, FONT_SIZE + 4, margin, xaxis=xaxis, yaxis=yaxis, **extra)


def encoding_heatmap(
    pe: np.ndarray,
    title: str = "Positional encoding",
    meta: str = "pe-heatmap",
    lang: str = "en",
    limit: float | None = None,
) -> go.Figure:
    """(T, D) table as the classic figure: dimension across, position up, diverging colours in [-1, 1]
    for sinusoids (the table's own range otherwise). ``limit``: the colours span ±limit instead, values
    beyond it take the end colours (a learned table of small values with a few outliers), and the title
    says so. Thinned to MAX_HEATMAP_ROWS × MAX_HEATMAP_COLS."""
    t, d = pe.shape
    rs, cs = thinning(t, MAX_HEATMAP_ROWS), thinning(d, MAX_HEATMAP_COLS)
    if limit is not None:
        share = float((np.abs(pe) <= limit).mean()) if pe.size else 1.0
        title += "<br>" + translate("figures.colours_clipped", lang, limit=f"{limit:.3g}", share=f"{share:.0%}")
    else:
        limit = max(1.0, float(np.abs(pe).max())) if pe.size else 1.0
    heat = go.Heatmap(
        z=pe[::rs, ::cs],
        x=np.arange(0, d, cs),
        y=np.arange(0, t, rs),
        colorscale=DIVERGING,
        zmid=0,
        zmin=-limit,
        zmax=limit,
        hovertemplate=translate("figures.pe_hover", lang) + "<extra></extra>",
        colorbar=dict(thickness=18),
    )
    if rs > 1 or cs > 1:
        title += "<br>" + translate("figures.thinned_shown", lang, what=thinned_axes(t, d, lang))
    x_title, y_title = translate("figures.dimension_depth", lang), translate("figures.position", lang)
    return legible(go.Figure(heat, _layout(title, 520, meta, x_title, y_title)))


def default_dimensions(d_model: int) -> list[int]:
    """Even dimensions at 0, 1/8, 1/4 and 1/2 of d_model: periods 2π·base^(0, 1/8, 1/4, 1/2), slower and slower."""
    return sorted({int(d_model * f) // 2 * 2 for f in (0, 1 / 8, 1 / 4, 1 / 2)} & set(range(d_model)))


def dimension_curves(pe: np.ndarray, dimensions: list[int], periods: np.ndarray, lang: str = "en") -> go.Figure:
    """One line per chosen dimension over position: pe (T, D), periods (D,) in positions."""
    lines = [
        go.Scatter(
            x=np.arange(pe.shape[0]),
            y=pe[:, dim],
            mode="lines",
            meta=int(dim),
            line=dict(width=3, color=CURVE_COLOURS[n % len(CURVE_COLOURS)]),
            name=translate(
                "figures.curve_name", lang, dim=dim, fn="sin" if dim % 2 == 0 else "cos", period=f"{periods[dim]:,.1f}"
            ),
        )
        for n, dim in enumerate(dimensions)
    ]
    title = translate("figures.curves_title", lang)
    return legible(
        go.Figure(
            lines,
            _layout(
                title,
                480,
                "pe-curves",
                translate("figures.position", lang),
                translate("figures.value", lang),
                yaxis=dict(range=[-1.1, 1.1]),
                legend=dict(orientation="h", y=-0.25, font=dict(size=FONT_SIZE)),
            ),
        )
    )


def wavelength_figure(periods: np.ndarray, lang: str = "en") -> go.Figure:
    """Period of every dimension's sinusoid (D,), log scale: a straight line from 2π to 2π·base."""
    dots = go.Scatter(
        x=np.arange(len(periods)),
        y=periods,
        mode="markers+lines",
        marker=dict(size=7),
        line=dict(width=2),
        hovertemplate=translate("figures.period_hover", lang) + "<extra></extra>",
    )
    title = translate("figures.periods_title", lang)
    return legible(
        go.Figure(
            dots,
            _layout(
                title,
                480,
                "pe-periods",
                translate("figures.dimension", lang),
                translate("figures.period_axis", lang),
                # a label at each power of ten only: plotly writes the in-between labels (2, 5) of a log
                # axis at 12 px, too small for a projector; the in-between ticks stay, unlabelled
                yaxis=dict(type="log", dtick=1, minor=dict(ticks="outside", showgrid=True, dtick="D2")),
            ),
        )
    )


def similarity(pe: np.ndarray, kind: str = "cosine") -> np.ndarray:
    """(T, T) PE·PEᵀ (``kind="dot"``) or cosine similarity between the rows of pe (T, D)."""
    dots = pe.astype(np.float64) @ pe.T.astype(np.float64)
    if kind == "dot":
        return dots.astype(np.float32)
    norms = np.linalg.norm(pe.astype(np.float64), axis=1)
    return (dots / np.maximum(np.outer(norms, norms), 1e-12)).astype(np.float32)


def similarity_heatmap(
    pe: np.ndarray, kind: str = "cosine", meta: str = "pe-similarity", lang: str = "en"
) -> go.Figure:
    """Position × position similarity of pe (T, D), on at most MAX_SIMILARITY thinned positions."""
    step = thinning(pe.shape[0], MAX_SIMILARITY)
    positions = np.arange(0, pe.shape[0], step)
    sim = similarity(pe[positions], kind)  # thinned first: a 2048 × 2048 product would stall the page
    label = translate("figures.cosine", lang) if kind == "cosine" else "PE·PEᵀ"
    title = translate("figures.similarity_title", lang, label=label)
    if step > 1:
        title += "<br>" + every_nth(step, "position", lang)
    limit = 1.0 if kind == "cosine" else (float(np.abs(sim).max()) if sim.size else 1.0)
    span = float(positions[-1] + step / 2) if positions.size else 0.5
    heat = go.Heatmap(
        z=sim,
        x=positions,
        y=positions,
        colorscale=DIVERGING,
        zmid=0,
        zmin=-limit,
        zmax=limit,
        hovertemplate=translate("figures.similarity_hover", lang) + " " + label + " %{z:.3f}<extra></extra>",
        colorbar=dict(thickness=18),
    )
    return legible(
        go.Figure(
            heat,
            _layout(
                title,
                560,
                meta,
                translate("figures.position", lang),
                translate("figures.position", lang),
                # explicit ranges on both axes: with a square scale plotly otherwise widens one of
                # them past the data (positions −20 … 120 for 100 positions)
                xaxis=dict(range=[-0.5, span], constrain="domain"),
                yaxis=dict(range=[span, -0.5], scaleanchor="x", constrain="domain"),
            ),
        )
    )


def learned_similarity(table: np.ndarray, lang: str = "en") -> go.Figure:
    """Cosine similarity between a model's learned position vectors, table (P, D) -> positions × positions
    (at most MAX_SIMILARITY thinned positions): where a sinusoid lab has formulas to draw, a learned
    table has only this: which positions the model treats alike (a bright band along the diagonal:
    nearby positions are alike)."""
    figure = similarity_heatmap(table, "cosine", "pe-learned-map", lang)
    step = thinning(table.shape[0], MAX_SIMILARITY)
    title = translate("figures.learned_similarity_title", lang, positions=table.shape[0], width=table.shape[1])
    if step > 1:
        title += "<br>" + every_nth(step, "position", lang)
    figure.update_layout(title_text=title)
    return figure


def distance_profile(
    pe: np.ndarray, kind: str = "cosine", starts: tuple[int, ...] | None = None, lang: str = "en"
) -> go.Figure:
    """Similarity of position p with p + Δ against Δ, one line per start p: the lines coincide when the
    pattern depends only on the distance Δ. pe (T, D)."""
    t = pe.shape[0]
    if starts is None:
        starts = tuple(sorted({0, t // 4, t // 2}))
    lines = []
    for n, start in enumerate(starts):
        rows = _row_similarity(pe, start, kind)
        lines.append(
            go.Scatter(
                x=np.arange(len(rows)),
                y=rows,
                mode="lines",
                name=translate("figures.from_position", lang, start=start),
                line=dict(
                    width=6 - 1.5 * n, color=CURVE_COLOURS[n % len(CURVE_COLOURS)], dash=("solid", "dash", "dot")[n % 3]
                ),
                meta=int(start),
            )
        )
    title = translate("figures.distance_title", lang)
    return legible(
        go.Figure(
            lines,
            _layout(
                title,
                560,
                "pe-distance",
                translate("figures.distance_axis", lang),
                translate("figures.cosine", lang) if kind == "cosine" else "PE·PEᵀ",
                yaxis=dict(range=_similarity_range(lines, kind)),
                legend=dict(orientation="h", y=-0.25, font=dict(size=FONT_SIZE)),
            ),
        )
    )


def _similarity_range(lines: list[go.Scatter], kind: str) -> list[float]:
    """The y range of the distance profile: cosine within −1 … 1, a dot product within its own values."""
    if kind == "cosine":
        return [-1.05, 1.05]
    values = np.concatenate([np.asarray(line.y, dtype=np.float64) for line in lines]) if lines else np.ones(1)
    top = max(float(np.abs(values).max()), 1e-6) * 1.05
    return [-top if (values < 0).any() else 0.0, top]


def _row_similarity(pe: np.ndarray, start: int, kind: str) -> np.ndarray:
    """Similarity of row ``start`` with rows start.. of pe (T, D), without the full T × T matrix."""
    rest = pe[start:].astype(np.float64)
    dots = rest @ pe[start].astype(np.float64)
    if kind == "dot":
        return dots.astype(np.float32)
    norms = np.linalg.norm(rest, axis=1) * np.linalg.norm(pe[start])
    return (dots / np.maximum(norms, 1e-12)).astype(np.float32)


def embedding_parts(
    tokens: np.ndarray,
    positions: np.ndarray,
    combined: np.ndarray,
    labels: list[str],
    lang: str = "en",
    sum_key: str = "figures.part_sum",
    title_key: str = "figures.parts_title",
) -> go.Figure:
    """Token embeddings, positional encodings and their sum, each (n, D), side by side on one colour scale
    and one token axis. ``sum_key`` / ``title_key``: the sum panel's and the figure's titles (catalogue keys:
    whether the sum is the first layer's input, or goes through a LayerNorm first)."""
    limit = max(1e-6, float(max(np.abs(a).max() for a in (tokens, positions, combined))))
    titles = tuple(translate(k, lang) for k in ("figures.part_token", "figures.part_position", sum_key))
    domains = ((0.0, 0.31), (0.34, 0.65), (0.68, 0.99))
    traces, axes, notes = [], {}, []
    for col, (part, name, domain) in enumerate(zip((tokens, positions, combined), titles, domains), start=1):
        x = "x" if col == 1 else f"x{col}"
        traces.append(
            go.Heatmap(
                z=part,
                x=np.arange(part.shape[1]),
                y=labels,
                xaxis=x,
                yaxis="y",
                colorscale=DIVERGING,
                zmid=0,
                zmin=-limit,
                zmax=limit,
                showscale=col == 3,
                colorbar=dict(thickness=18),
                name=name,
                hovertemplate="%{y}<br>" + translate("figures.dimension_value_hover", lang) + "<extra></extra>",
            )
        )
        axes["xaxis" if col == 1 else f"xaxis{col}"] = axis_style(
            translate("figures.dimension", lang), domain=list(domain), anchor="y"
        )
        notes.append(panel_title(name, sum(domain) / 2))
    height = min(900, max(380, 26 * len(labels) + 160))
    layout = _layout(
        translate(title_key, lang),
        height,
        "pe-sentence",
        None,
        None,
        yaxis=dict(autorange="reversed", type="category"),
        annotations=notes,
    )
    layout.update(axes)
    layout["margin"]["t"] = 100
    return legible(go.Figure(traces, layout))


def normed_heatmap(normed: np.ndarray, labels: list[str], lang: str = "en") -> go.Figure:
    """The first layer's input (n, D) after the embedding LayerNorm, on a colour scale of its own (its values
    are several times the parts'), the same token axis as :func:`embedding_parts`."""
    limit = max(1e-6, float(np.abs(normed).max())) if normed.size else 1.0
    heat = go.Heatmap(
        z=normed,
        x=np.arange(normed.shape[1]),
        y=labels,
        colorscale=DIVERGING,
        zmid=0,
        zmin=-limit,
        zmax=limit,
        colorbar=dict(thickness=18),
        hovertemplate="%{y}<br>" + translate("figures.dimension_value_hover", lang) + "<extra></extra>",
    )
    height = min(900, max(380, 26 * len(labels) + 160))
    layout = _layout(
        translate("figures.normed_title", lang),
        height,
        "pe-normed",
        translate("figures.dimension", lang),
        None,
        yaxis=dict(autorange="reversed", type="category"),
    )
    return legible(go.Figure(heat, layout))


def norm_bars(
    labels: list[str],
    token_norms: np.ndarray,
    position_norms: np.ndarray,
    sum_norms: np.ndarray,
    lang: str = "en",
    normed_norms: np.ndarray | None = None,
) -> go.Figure:
    """Per-token L2 norms (n,) of the three parts (and, given ``normed_norms``, of the LayerNorm's output),
    as grouped bars."""
    bars = [
        go.Bar(
            x=labels,
            y=values,
            name=name,
            marker_color=colour,
            hovertemplate="%{x}<br>" + name + " %{y:.2f}<extra></extra>",
        )
        for name, values, colour in (
            (translate("figures.norm_token", lang), token_norms, "#1f77b4"),
            (translate("figures.norm_position", lang), position_norms, "#d62728"),
            (translate("figures.norm_sum", lang), sum_norms, "#7f7f7f"),
            (translate("figures.norm_normed", lang), normed_norms, "#2ca02c"),
        )
        if values is not None
    ]
    legend = dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom", font=dict(size=FONT_SIZE))
    return legible(
        go.Figure(
            bars,
            _layout(
                translate("figures.norms_title", lang),
                460,
                "pe-norms",
                None,
                translate("figures.norm_axis", lang),
                xaxis=dict(type="category", tickangle=tick_angle(labels, 900)),
                barmode="group",
                legend=legend,
            ),
        )
    )


def size_caption(model_name: str, token_norms: np.ndarray, position_norms: np.ndarray, lang: str = "en") -> str:
    """One sentence saying which part dominates the model's input, from per-token norms (n,)."""
    tok, pos = float(np.median(token_norms)), float(np.median(position_norms))
    if pos < 1e-9:
        return translate("figures.size_zero", lang, model=model_name)
    ratio = tok / pos
    sizes = translate("figures.size_norms", lang, tok=f"{tok:.2f}", pos=f"{pos:.2f}")
    if ratio >= 3:
        verdict = translate("figures.size_words", lang, ratio=f"{ratio:.1f}")
    elif ratio <= 1 / 3:
        verdict = translate("figures.size_positions", lang, ratio=f"{1 / ratio:.1f}")
    else:
        verdict = translate("figures.size_similar", lang, ratio=f"{ratio:.1f}")
    return translate("figures.size_sentence", lang, model=model_name, sizes=sizes, verdict=verdict)
