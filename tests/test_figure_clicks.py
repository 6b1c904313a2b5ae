"""Figures that are controls: a mask cell and a Vision patch carry their position for a click, and the
pages read the click back (the clicks themselves are tested in a real browser, tests/test_browser_clicks.py)."""

from __future__ import annotations

import numpy as np

from ui.figures import masks, vision


def test_every_mask_cell_has_a_click_target_with_its_query_and_key():
    labels = ["0:the", "1:movie", "2:was"]
    fig = masks.mask_heatmap(np.tril(np.ones((3, 3), bool)), labels, "mask", clickable=True)
    target = next(trace for trace in fig.data if trace.name == "switch")
    assert [tuple(c) for c in target.customdata] == [(q, k) for q in range(3) for k in range(3)]
    assert list(target.x[:3]) == labels and list(target.y[:3]) == ["0:the"] * 3
    assert fig.layout.clickmode == "event+select"
    state = {"selection": {"points": [{"x": "2:was", "customdata": [2, 1]}]}}
    assert masks.clicked_cell(state) == (2, 1)
    assert masks.clicked_cell({"selection": {"points": []}}) is None and masks.clicked_cell(None) is None
    assert not any(trace.name == "switch" for trace in masks.mask_heatmap(np.ones((3, 3), bool), labels, "m").data)


def test_square_data_gets_square_cells():
    fig = masks.mask_heatmap(np.ones((4, 4), bool), [f"{i}:w" for i in range(4)], "mask", width_px=300)
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1


def test_a_vision_patch_carries_its_row_and_column_and_weight():
    weights = np.arange(16, dtype=float).reshape(4, 4) / 120
    image = np.zeros((1, 28, 28))
    fig = vision.attention_overlay(image, weights, 7, "t", clickable=True)
    target = next(trace for trace in fig.data if trace.name == "patch")
    row_col = np.asarray(target.customdata)[:, :2].astype(int)
    assert row_col.tolist() == [[r, c] for r in range(4) for c in range(4)]
    np.testing.assert_allclose(np.asarray(target.customdata)[:, 4], weights.reshape(-1))
    assert vision.clicked_patch({"selection": {"points": [{"customdata": [3, 1, 4, 2, 0.5]}]}}) == (3, 1)


def test_a_grey_picture_leaves_the_attention_colours_exactly_as_on_the_colour_bar():
    """Inferno at opacity 0.6 over a black digit background did not match its colour bar: the heat is now
    opaque, and the digit's ink lies over it with no alpha where the picture is black."""
    image = np.zeros((1, 28, 28))
    image[0, 10:18, 12:15] = 1.0  # a stroke
    fig = vision.attention_overlay(image, np.full((4, 4), 1 / 16), 7, "t", opacity=0.6)
    heat, ink = [trace for trace in fig.data if trace.type == "heatmap"]  # the ink is drawn over the heat
    assert heat.opacity in (None, 1.0) and heat.showscale is not False
    assert ink.showscale is False and ink.colorscale[0][1] == "rgba(255,255,255,0)"  # no ink: fully transparent
    z = np.asarray(ink.z)
    assert z[0, 0] == 0 and z[12, 13] == 1.0 and "0.40" in ink.colorscale[-1][1]
    assert list(fig.layout.xaxis.range) == [-0.5, 27.5]  # not padded for the click markers
