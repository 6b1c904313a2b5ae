"""Rotary positions (RoPE) on the Positional encoding page.

:func:`rotary_demo` runs one query and one key through the core's ``RotaryEmbedding`` (the module
every rotary model in the app runs) at every position; the figure functions take its numpy arrays
and return ``plotly.graph_objects.Figure`` objects, so they work in a notebook too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from transformer.core.positional import RotaryEmbedding
from ui.i18n import translate

from .common import DIVERGING, FONT_SIZE, axis_style, legible, projector_layout

POSITIONS = 64  # positions drawn: room for the key at 40 seen from 42, few enough to read the map
STARTS = (3, 40)  # key positions of the two score-against-distance lines (3 -> 5 and 40 -> 42 score alike)
LAG = 1  # the example key is the query turned this many positions back: what a previous-token head learns
SEED = 0
QUERY_COLOUR, KEY_COLOUR, PATH_COLOUR = "#d62728", "#1f77b4", "#9ca3af"


@dataclass(frozen=True)
class RotaryDemo:
    """One query and one key, rotated at every position by the core's rotary function.

    queries, keys: (T, r) the vector as the head sees it at position 0 … T-1 (r rotated dimensions).
    scores: (T, T) q_m · k_n, row m the query's position, column n the key's.
    step: (r / 2,) radians each pair turns per position (pair 0 fastest). style: "halves" | "interleaved"."""

    queries: np.ndarray
    keys: np.ndarray
    scores: np.ndarray
    step: np.ndarray
    style: str


def rotary_demo(rotary_dim: int, base: float, style: str, positions: int = POSITIONS, seed: int = SEED) -> RotaryDemo:
    """A unit query and a key that is the same query turned ``LAG`` positions back, rotated at positions
    0 … positions-1; their score is highest when the key sits ``LAG`` positions before the query."""
    rope = RotaryEmbedding(rotary_dim, base, style)
    step = rope.inv_freq.numpy().astype(np.float64)  # (r/2,) radians per position
    with torch.inference_mode():
        q = torch.from_numpy(example_query(step, style, seed)).view(1, 1, 1, rotary_dim)  # (B, H, T, r), all 1 but r
        k = rope(q, start=LAG)  # R(LAG)·q, so R(n)·k = R(n + LAG)·q
        queries = rope(q.expand(1, 1, positions, rotary_dim))[0, 0]  # (T, r): R(m)·q at m = 0 … T-1
        keys = rope(k.expand(1, 1, positions, rotary_dim))[0, 0]
        scores = queries @ keys.T  # (T_q, T_k)
    return RotaryDemo(queries.numpy(), keys.numpy(), scores.numpy(), step, style)


def example_query(step: np.ndarray, style: str, seed: int = SEED) -> np.ndarray:
    """A unit vector (float32, r = 2·len(step)) with a random direction in each pair's plane and most of its
    length in the fast pairs (pair i's share of q·q is proportional to its speed ``step[i]``), as a
    position-minded head would put it: the slow pairs hardly turn over a sentence, so they would only
    lift every score alike."""
    rng = np.random.default_rng(seed)
    length, phase = np.sqrt(step), rng.uniform(0.0, 2 * np.pi, len(step))
    q = np.zeros(2 * len(step))
    for pair, (a, b) in enumerate(pair_dims(i, len(q), style) for i in range(len(step))):
        q[a], q[b] = length[pair] * np.cos(phase[pair]), length[pair] * np.sin(phase[pair])
    return (q / np.linalg.norm(q)).astype(np.float32)


def pair_dims(pair: int, rotary_dim: int, style: str) -> tuple[int, int]:
    """The two dimensions that rotate together as ``pair``: (i, i + r/2) for "halves", (2i, 2i + 1) interleaved."""
    return (2 * pair, 2 * pair + 1) if style == "interleaved" else (pair, pair + rotary_dim // 2)


def degrees(radians: float) -> float:
    return float(np.degrees(radians))


def plane_angle(demo: RotaryDemo, pair: int, query: int, key: int) -> float:
    """The angle (degrees, −180 … 180) from the key's arrow to the query's in ``pair``'s plane."""
    a, b = pair_dims(pair, demo.queries.shape[1], demo.style)
    turn = np.arctan2(demo.queries[query, b], demo.queries[query, a]) - np.arctan2(demo.keys[key, b], demo.keys[key, a])
    return degrees((turn + np.pi) % (2 * np.pi) - np.pi)


def _layout(title: str, height: int, meta: str, x_title: str, y_title: str, **extra) -> dict:
    xaxis = axis_style(x_title, **extra.pop("xaxis", {}))
    yaxis = axis_style(y_title, **extra.pop("yaxis", {}))
    margin = dict(l=70, r=30, t=95 if "<br>" in title else 70, b=60)
    return projector_layout(title, height, meta, FONT_SIZE + 4, margin, xaxis=xaxis, yaxis=yaxis, **extra)


def _arrow(x: float, y: float, colour: str, name: str, dash: str = "solid") -> go.Scatter:
    """An arrow from the origin to (x, y): a line whose end marker points along it."""
    return go.Scatter(
        x=[0.0, x],
        y=[0.0, y],
        mode="lines+markers",
        name=name,
        line=dict(color=colour, width=5, dash=dash),
        marker=dict(symbol="arrow", size=[0, 22], angleref="previous", color=colour),
        hoverinfo="name",
    )


def rotation_plane(demo: RotaryDemo, pair: int, query: int, key: int, lang: str = "en") -> go.Figure:
    """``pair``'s plane: grey dots where the query points at each position, an arrow for the query at
    ``query`` and one for the key at ``key``. Moving both positions by the same amount turns both arrows
    together, so the angle between them (and their part of q·k) stays."""
    a, b = pair_dims(pair, demo.queries.shape[1], demo.style)
    path = demo.queries[:, [a, b]].astype(np.float64)  # (T, 2)
    radius = max(float(np.linalg.norm(path, axis=1).max()), 1e-6) * 1.25
    dots = go.Scatter(
        x=path[:, 0],
        y=path[:, 1],
        mode="markers",
        name=translate("positional.rotary_path", lang, last=len(path) - 1),
        marker=dict(size=9, color=PATH_COLOUR),
        text=np.arange(len(path)),
        hovertemplate=translate("positional.rotary_path_hover", lang) + "<extra></extra>",
    )
    arrows = [
        _arrow(*demo.queries[query, [a, b]], QUERY_COLOUR, translate("positional.rotary_query_at", lang, pos=query)),
        _arrow(*demo.keys[key, [a, b]], KEY_COLOUR, translate("positional.rotary_key_at", lang, pos=key), "dash"),
    ]
    step = f"{degrees(demo.step[pair]):.3g}"
    title = translate("positional.rotary_plane_title", lang, pair=pair, a=a, b=b, step=step)
    title += "<br>" + translate(
        "positional.rotary_plane_angle", lang, angle=f"{plane_angle(demo, pair, query, key):.1f}"
    )
    bounds = [-radius, radius]
    return legible(
        go.Figure(
            [dots, *arrows],
            _layout(
                title,
                520,
                "rope-plane",
                translate("positional.rotary_dimension", lang, dim=a),
                translate("positional.rotary_dimension", lang, dim=b),
                xaxis=dict(range=bounds, constrain="domain", zeroline=True),
                yaxis=dict(range=bounds, scaleanchor="x", constrain="domain", zeroline=True),
                legend=dict(orientation="h", y=-0.2, font=dict(size=FONT_SIZE)),
            ),
        )
    )


def distance_marks(distance: int, positions: int = POSITIONS) -> list[tuple[int, int]]:
    """(query, key) cells at ``distance`` = query − key from the keys at ``STARTS`` (the distance is first
    kept to the range where both lines exist)."""
    low, high = -min(STARTS), positions - 1 - max(STARTS)
    distance = min(max(distance, low), high)
    return [(start + distance, start) for start in STARTS]


def score_heatmap(scores: np.ndarray, marks: list[tuple[int, int]], lang: str = "en") -> go.Figure:
    """scores (T_q, T_k) = q_m · k_n as a map, query position down, key position across; the cells in
    ``marks`` [(query, key), ...] are outlined. Each diagonal has one colour when the score depends on m − n alone."""
    t_q, t_k = scores.shape
    heat = go.Heatmap(
        z=scores,
        x=np.arange(t_k),
        y=np.arange(t_q),
        colorscale=DIVERGING,
        zmid=0,
        zmin=-1,
        zmax=1,
        hovertemplate=translate("positional.rotary_score_hover", lang) + "<extra></extra>",
        colorbar=dict(thickness=18),
    )
    outlined = go.Scatter(
        x=[key for _, key in marks],
        y=[query for query, _ in marks],
        mode="markers",
        marker=dict(symbol="square-open", size=16, color="#111111", line=dict(width=3)),
        hoverinfo="skip",
        showlegend=False,
    )
    title = translate("positional.rotary_map_title", lang)
    return legible(
        go.Figure(
            [heat, outlined],
            _layout(
                title,
                560,
                "rope-scores",
                translate("positional.rotary_key_axis", lang),
                translate("positional.rotary_query_axis", lang),
                xaxis=dict(range=[-0.5, t_k - 0.5], constrain="domain"),
                yaxis=dict(range=[t_q - 0.5, -0.5], scaleanchor="x", constrain="domain"),
            ),
        )
    )


def score_by_distance(scores: np.ndarray, marks: list[tuple[int, int]], lang: str = "en") -> go.Figure:
    """q·k against the distance query − key, one line per key position in ``STARTS`` (over the distances
    both lines have); the cells in ``marks`` are labelled. The lines lie on top of each other when the
    score depends on the distance alone. scores (T, T)."""
    positions = scores.shape[0]
    distances = np.arange(-min(STARTS), positions - max(STARTS))
    traces = []
    for n, start in enumerate(STARTS):
        traces.append(
            go.Scatter(
                x=distances,
                y=scores[start + distances, start],
                mode="lines",
                name=translate("positional.rotary_line_name", lang, key=start),
                line=dict(width=7 - 3 * n, color=(QUERY_COLOUR, KEY_COLOUR)[n % 2], dash=("solid", "dot")[n % 2]),
                meta=int(start),
            )
        )
    traces.append(
        go.Scatter(
            x=[query - key for query, key in marks],
            y=[float(scores[query, key]) for query, key in marks],
            mode="markers+text",
            text=[translate("positional.rotary_mark", lang, key=key, query=query) for query, key in marks],
            textposition=["top right", "bottom right"][: len(marks)],
            marker=dict(size=14, color="#111111", symbol="circle-open", line=dict(width=3)),
            showlegend=False,
            hoverinfo="skip",
            meta="marks",
        )
    )
    return legible(
        go.Figure(
            traces,
            _layout(
                translate("positional.rotary_distance_title", lang),
                560,
                "rope-distance",
                translate("positional.rotary_distance_axis", lang),
                "q·k",
                yaxis=dict(range=[-1.1, 1.1]),
                legend=dict(orientation="h", y=-0.25, font=dict(size=FONT_SIZE)),
            ),
        )
    )
