"""Figures written as plain specs (ui/figures/spec.py) draw exactly what the validated plotly figure
draws: the fast path of the shared figure store against the path it replaces, at the normal and the
presenter font scale, for every such figure of the Generate page."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from ui.figures import generate
from ui.figures.common import at_font_scale
from ui.figures.spec import legible_spec, merged

RNG = np.random.default_rng(0)
PREFIX = ["<|im_start|>", "The", " cat", " <b>sat</b>", " 고양이", " on"]
ROWS = RNG.random((3, 4, len(PREFIX)))
PROBS = np.sort(RNG.random(8))[::-1] / 4
MATRIX = np.tril(RNG.random((6, 6)))

CASES = {
    "next_token_bars greedy": (generate.next_token_bars, ([f"t{i}" for i in range(8)], PROBS, None, 2, "en")),
    "next_token_bars sampling": (generate.next_token_bars, ([f"t{i}" for i in range(8)], PROBS, PROBS / 2, 0, "ko")),
    "head_rows_heatmap": (generate.head_rows_heatmap, (ROWS, PREFIX, "en")),
    "head_rows_heatmap kv": (generate.head_rows_heatmap, (ROWS, PREFIX, "ko", [0, 0, 1, 1], 4)),
    "masked_self_attention": (generate.masked_self_attention, (MATRIX, PREFIX, "L1 H2", "en")),
    "distribution_shift": (generate.distribution_shift, (PREFIX, PROBS[:6], PROBS[:6] / 2, "ko")),
    "answer_attention": (generate.answer_attention, (ROWS[0], RNG.random(3), ["a", "b", "c"], PREFIX, "Q", "en")),
}


def drawn(fig: go.Figure | dict) -> dict:
    """What plotly.js receives, as plain JSON values (arrays, NaN and all)."""
    spec = fig.to_dict() if isinstance(fig, go.Figure) else go.Figure(fig).to_dict()
    return json.loads(pio.to_json(spec, validate=False, engine="json"))


@pytest.mark.parametrize("scale", [1.0, 1.6])
@pytest.mark.parametrize("case", list(CASES))
def test_the_spec_path_draws_what_the_validated_figure_draws(case, scale):
    fn, args = CASES[case]
    fast = legible_spec(fn.spec(*args), scale)
    assert isinstance(fast, dict) and not isinstance(fast, go.Figure)
    assert drawn(fast) == drawn(at_font_scale(fn(*args), scale))


def test_the_figure_function_itself_still_returns_a_legible_figure():
    fig = generate.head_rows_heatmap(ROWS, PREFIX, "en")
    assert isinstance(fig, go.Figure) and fig.layout.meta == "generate-rows"
    assert fig.layout.font.size >= 16 and fig.layout.xaxis.tickfont.size >= 16
    assert fig.data[0].z.shape == (12, len(PREFIX))


def test_presenter_scale_grows_a_category_heatmap_to_number_every_row_as_legible_does():
    rows = [f"{i}:tok" for i in range(20)]  # room: 160 + 20 x 26 px x 1.3 = 836 px (under 900)
    spec = {"data": [{"type": "heatmap", "z": RNG.random((20, 4)), "y": rows, "colorbar": {"thickness": 9}}],
            "layout": {"height": 400, "yaxis": {"type": "category"}, "title": "rows",
                       "annotations": [{"text": "note", "x": 0, "y": 0, "font": {"size": 30}}]}}  # fmt: skip
    fast = legible_spec(spec, 1.6)
    assert fast["layout"]["yaxis"]["dtick"] == 1 and fast["layout"]["height"] > 400
    assert fast["layout"]["annotations"][0]["font"] == {"size": 30, "color": "#111111"}
    assert drawn(fast) == drawn(at_font_scale(go.Figure(spec), 1.6))


def test_merged_lays_dicts_over_dicts_and_replaces_the_rest():
    base = {"a": {"b": 1, "c": 2}, "d": [1], "e": 5}
    assert merged(base, {"a": {"c": 3}, "d": [2], "f": {"g": 1}}) == {"a": {"b": 1, "c": 3}, "d": [2], "e": 5,
                                                                       "f": {"g": 1}}  # fmt: skip
    assert base == {"a": {"b": 1, "c": 2}, "d": [1], "e": 5}  # untouched
