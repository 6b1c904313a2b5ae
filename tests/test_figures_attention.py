"""The Attention page's figures and downloads as pure functions: numpy in, Figure (or bytes) out."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from PIL import Image

from ui.downloads import analysis_json_bytes, analysis_npz, matrix_csv
from ui.figures import attention as figs
from ui.figures.common import token_labels


def softmax_rows(shape, seed=0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=shape)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def to_dict(fig) -> dict:
    """The figure as the browser receives it."""
    return json.loads(pio.to_json(fig, validate=False))


def decoded(value) -> np.ndarray:
    if isinstance(value, dict):
        shape = [int(n) for n in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.asarray(value)


def test_heatmap_has_the_weights_and_one_row_per_token_even_when_repeated():
    w = softmax_rows((4, 4))
    trace = to_dict(figs.attention_heatmap(w, ["the", "cat", "the", "<b>"], title="L1 H1"))["data"][0]
    np.testing.assert_array_equal(decoded(trace["z"]), w)
    assert trace["z"]["dtype"] == "f4"  # binary float32, not JSON numbers
    assert trace["y"] == trace["x"] == ["0:the", "1:cat", "2:the", "3:&lt;b&gt;"]
    assert "%{z:.4f}" in trace["hovertemplate"] and trace["zmax"] == pytest.approx(float(w.max()))


def test_heatmap_window_labels_start_at_the_window():
    w = softmax_rows((3, 5))
    fig = figs.attention_heatmap(w, ["c", "d", "e"], list("abcde"), query_start=2, zmax=1.0)
    assert list(fig.data[0].y) == token_labels(["c", "d", "e"], 2) and fig.data[0].zmax == 1.0
    assert fig.layout.yaxis.autorange == "reversed"  # the first query on top, as in a matrix


@pytest.mark.parametrize(
    "weights, tokens, message",
    [
        (np.ones((2, 3)), ["a", "b"], "do not fit"),
        (np.ones((2, 2, 2)), ["a", "b"], "must be 2-D"),
        (np.array([[np.nan, 1.0], [0.5, 0.5]]), ["a", "b"], "NaN"),
    ],
)
def test_heatmap_rejects_what_does_not_fit(weights, tokens, message):
    with pytest.raises(ValueError, match=message):
        figs.attention_heatmap(weights, tokens)


def test_float32_binary_is_smaller_than_json_numbers():
    w = softmax_rows((128, 128))
    compact = figs.payload_bytes(figs.attention_heatmap(w, [f"w{i}" for i in range(128)]))
    numbers = len(json.dumps(w.astype(np.float64).tolist()))
    assert compact < numbers / 2
    assert compact < 128 * 128 * 6 + 20_000  # ~5.3 bytes a cell in base64, plus labels and layout


def test_thumbnail_keeps_a_single_strong_weight_visible():
    w = np.zeros((200, 200), dtype=np.float32)
    w[150, 7] = 1.0
    image = np.asarray(Image.open(io.BytesIO(figs.thumbnail_png(w, size=64))).convert("RGB"))  # as shown
    assert image.shape == (50, 50, 3)  # 200 tokens in blocks of 4
    darkest = np.unravel_index(image.sum(axis=2).argmin(), image.shape[:2])
    assert darkest == (150 // 4, 7 // 4)
    assert (image.sum(axis=2) < image.sum(axis=2).max()).sum() == 1


def test_thumbnail_pixels_are_the_colour_table_at_each_blocks_maximum():
    w = softmax_rows((130, 130), seed=3)  # 130 tokens: blocks of 3, the last padded
    image = Image.open(io.BytesIO(figs.thumbnail_png(w, size=64)))
    assert image.mode == "P"  # a palette PNG: each pixel a level of the colour table
    blocks = np.zeros((132, 132), dtype=np.float32)
    blocks[:130, :130] = w
    pooled = blocks.reshape(44, 3, 44, 3).max(axis=(1, 3))
    levels = np.round(pooled / pooled.max() * 255).astype(np.uint8)
    np.testing.assert_array_equal(np.asarray(image.convert("RGB")), figs._colour_table()[levels])


@pytest.mark.parametrize(
    "build",
    [
        lambda: figs.attention_heatmap(softmax_rows((5, 7)), list("abcde"), list("vwxyzab"), key_start=3),
        lambda: figs.head_grid(softmax_rows((2, 3, 9, 9)), selected=(1, 2)),
        lambda: figs.attention_lines(softmax_rows((6, 6)), list("abcdef"), top_k=2),
        lambda: figs.attention_lines(softmax_rows((6, 6)), list("abcdef"), threshold=0.1, top_k=None, focus=2),
    ],
)
def test_figures_made_without_validation_send_what_validated_ones_would(build):
    """The figures skip plotly's validation for speed: validating what they hold changes nothing sent
    (the same JSON object; only the order of keys may differ)."""
    fig = build()
    assert to_dict(go.Figure(fig.to_dict())) == to_dict(fig)


def grid_image(fig) -> np.ndarray:
    """The grid's one image (every thumbnail) as colour levels (the palette indices)."""
    (image,) = [trace for trace in to_dict(fig)["data"] if trace["type"] == "image"]
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(image["source"].split(",")[1]))))


def thumbnail(w: np.ndarray) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(figs.thumbnail_png(w))))


def test_grid_shows_every_heads_thumbnail_at_its_cell_and_outlines_the_chosen_one():
    a = softmax_rows((3, 2, 10, 10))
    fig = to_dict(figs.head_grid(a, selected=(1, 1)))
    assert [t["type"] for t in fig["data"]] == ["image", "scatter"]  # one image, then the click targets
    image = grid_image(figs.head_grid(a))
    for layer in range(3):
        for head in range(2):
            x0, y0, x1, y1 = figs.grid_cell(layer, head, (10, 10))
            # each head's own weights, scaled to its own maximum, as its single thumbnail shows them
            np.testing.assert_array_equal(image[y0 : y1 + 1, x0 : x1 + 1], thumbnail(a[layer, head]))
    assert [n["text"] for n in fig["layout"]["annotations"]] == ["L1 H1", "L1 H2", "L2 H1", "L2 H2", "L3 H1", "L3 H2"]
    targets = fig["data"][1]
    assert targets["text"][3] == "layer 2, head 2"
    (shape,) = fig["layout"]["shapes"]
    inside = [
        data
        for x, y, data in zip(targets["x"], targets["y"], targets["customdata"])
        if shape["x0"] < x < shape["x1"] and shape["y0"] < y < shape["y1"]
    ]
    assert inside == [[1, 1]]  # the outline frames the chosen head's click target and no other
    assert "shapes" not in to_dict(figs.head_grid(a))["layout"]


def test_grid_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match="layers, heads, T, T"):
        figs.head_grid(np.ones((2, 3, 4)))


def line_segments(fig) -> list[tuple[float, float, float]]:
    """(query row, key row, line width) of every drawn line."""
    out = []
    for trace in to_dict(fig)["data"]:
        if trace["mode"] != "lines":
            continue
        ys = decoded(trace["y"]).reshape(-1, 3)
        out += [(-q, -k, trace["line"]["width"]) for q, k, _ in ys]
    return out


def test_lines_join_each_query_to_the_keys_above_the_threshold():
    w = np.array([[0.7, 0.2, 0.1], [0.05, 0.9, 0.05], [0.3, 0.3, 0.4]], dtype=np.float32)
    fig = figs.attention_lines(w, ["a", "b", "a"], threshold=0.25, top_k=None)
    segments = line_segments(fig)
    assert sorted((q, k) for q, k, _ in segments) == [(0, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    widths = {(q, k): width for q, k, width in segments}
    assert widths[(1, 1)] > widths[(0, 0)] > widths[(2, 0)]
    assert list(fig.data[-2].text) == list(fig.data[-1].text) == ["0:a", "1:b", "2:a"]


def test_lines_focus_and_cap():
    w = softmax_rows((6, 6))
    focused = line_segments(figs.attention_lines(w, list("abcdef"), threshold=0.0, top_k=None, focus=4))
    assert {q for q, _, _ in focused} == {4} and len(focused) == 6
    capped = line_segments(figs.attention_lines(w, list("abcdef"), threshold=0.0, top_k=None, max_lines=5))
    strongest = sorted(w.ravel())[-5:]
    assert sorted(w[int(q), int(k)] for q, k, _ in capped) == pytest.approx(strongest)


def test_matrix_csv_round_trips_and_keeps_formulas_out():
    w = softmax_rows((2, 3))
    data = matrix_csv(w, ["=sum", "b"], ["x", "y", "z"], query_start=5)
    frame = pd.read_csv(io.BytesIO(data), index_col=0)
    assert list(frame.index) == ["5:=sum", "6:b"] and list(frame.columns) == ["0:x", "1:y", "2:z"]
    np.testing.assert_allclose(frame.to_numpy(), w, rtol=1e-5)


@pytest.fixture
def analysis(tiny_bundle):
    from transformer import analyze, load_model

    loaded = load_model(tiny_bundle)
    return loaded, analyze(loaded, ["the movie was great", "bad"])


def test_npz_holds_one_inputs_numbers(analysis):
    _, result = analysis
    with np.load(io.BytesIO(analysis_npz(result, 1, rollout=np.eye(1)))) as f:
        assert f["attention"].shape == (2, 4, 1, 1) and list(f["tokens"]) == ["bad"]
        assert f["probabilities"].shape == (2,) and list(f["label_names"]) == result.label_names
        np.testing.assert_array_equal(f["attention"], result.attention_for(1))
        assert f["rollout"].shape == (1, 1)


def test_json_download_is_the_cli_format(analysis):
    loaded, result = analysis
    data = json.loads(analysis_json_bytes(loaded, result, 0))
    assert set(data) == {"model", "device", "inputs"} and len(data["inputs"]) == 1
    assert data["model"]["config"]["d_model"] == 16 and data["inputs"][0]["tokens"] == ["the", "movie", "was", "great"]
    np.testing.assert_allclose(data["inputs"][0]["attention"]["encoder"], result.attention_for(0), atol=1e-6)


def test_lines_default_to_each_querys_strongest_keys_even_when_attention_is_diffuse():
    n = 40
    w = softmax_rows((n, n), seed=3) * 0.1 + 0.9 / n  # nearly uniform: every weight far below 0.1
    assert w.max() < 0.1
    segments = line_segments(figs.attention_lines(w, [f"t{i}" for i in range(n)]))
    assert len(segments) == 3 * n  # three per query by default
    for q in range(n):
        keys = sorted(int(k) for qq, k, _ in segments if qq == q)
        assert keys == sorted(np.argsort(-w[q])[:3].tolist())
    two = figs.top_k_mask(np.array([[0.1, 0.5, 0.4], [0.2, 0.2, 0.6]]), 2)
    assert two.tolist() == [[False, True, True], [True, False, True]]


def test_grid_click_targets_name_their_head():
    a = softmax_rows((2, 3, 5, 5))
    fig = figs.head_grid(a)
    overlay = fig.data[-1]
    assert overlay.type == "scatter" and [list(c) for c in overlay.customdata] == [
        [la, h] for la in range(2) for h in range(3)
    ]
    assert fig.layout.clickmode == "event+select"
    # a click on layer 2, head 3 as Streamlit reports it
    state = {"selection": {"points": [{"curve_number": 6, "point_index": 5, "customdata": [1, 2]}]}}
    assert figs.clicked_head(state) == (1, 2)
    assert figs.clicked_head({"selection": {"points": []}}) is None and figs.clicked_head(None) is None


def test_grid_of_cross_attention_is_not_square():
    cross = softmax_rows((1, 2, 3, 7))
    fig = figs.head_grid(cross, selected=(0, 1))
    x0, y0, x1, y1 = figs.grid_cell(0, 1, (3, 7))
    assert (x1 - x0 + 1, y1 - y0 + 1) == (7, 3)  # width = keys, height = queries
    np.testing.assert_array_equal(grid_image(fig)[y0 : y1 + 1, x0 : x1 + 1], thumbnail(cross[0, 1]))
    (shape,) = fig.layout.shapes
    assert shape.x0 < x0 < x1 < shape.x1 and shape.y0 < y0 < y1 < shape.y1


def test_encoder_decoder_blocks():
    enc, cross, dec = softmax_rows((3, 3)), softmax_rows((2, 3)), np.tril(softmax_rows((2, 2)))
    out = figs.encoder_decoder_blocks(enc, cross, dec)
    assert out.shape == (5, 5)
    np.testing.assert_array_equal(out[:3, 3:], 0.0)
    np.testing.assert_array_equal(out[3:, :3], cross)
    np.testing.assert_array_equal(out[3:, 3:], dec)
    with pytest.raises(ValueError, match="do not fit"):
        figs.encoder_decoder_blocks(enc, cross.T, dec)


def test_key_labels_turn_only_when_they_do_not_fit():
    few = figs.attention_heatmap(softmax_rows((4, 4)), ["the", "movie", "was", "good"])
    assert few.layout.xaxis.tickangle == 0
    many = figs.attention_heatmap(softmax_rows((40, 40)), [f"word{i}" for i in range(40)])
    assert many.layout.xaxis.tickangle in (-45, -90)


def test_a_bert_sized_grid_titles_columns_and_rows_once_and_stays_a_screen_tall():
    """12 × 12 heads: 'L10 H10' over every thumbnail would run together in a laptop's column; the
    columns are titled once (H1, 2, …, 12) and the rows at their left (L1 … L12)."""
    weights = np.full((12, 12, 6, 6), 1 / 6, dtype=np.float32)
    grid = figs.head_grid(weights)
    titles = [note.text for note in grid.layout.annotations]
    assert titles == ["H1", *map(str, range(2, 13)), *(f"L{n}" for n in range(1, 13))]
    assert grid.layout.height <= 500  # the figure is as tall as its grid drawn in a 340 px column
    small = figs.head_grid(np.full((2, 4, 6, 6), 1 / 6, dtype=np.float32))
    assert [note.text for note in small.layout.annotations][:2] == ["L1 H1", "L1 H2"]


def test_each_line_says_its_query_key_and_weight_once_on_hover():
    w = np.array([[0.7, 0.2, 0.1], [0.05, 0.9, 0.05], [0.3, 0.3, 0.4]], dtype=np.float32)
    fig = to_dict(figs.attention_lines(w, ["a", "b", "a"], threshold=0.25, top_k=None))
    hover = [t for t in fig["data"] if t["mode"] == "markers" and "→" in t["text"][0]]
    assert len(hover) == 1 and sorted(hover[0]["text"]) == sorted(
        ["0:a → 0:a: 0.700", "1:b → 1:b: 0.900", "2:a → 0:a: 0.300", "2:a → 1:b: 0.300", "2:a → 2:a: 0.400"]
    )
    xs, ys = decoded(hover[0]["x"]), decoded(hover[0]["y"])
    for text, x, y in zip(hover[0]["text"], xs, ys):  # each point lies on its own line
        q, k = int(text[0]), int(text.split("→ ")[1][0])
        assert y == pytest.approx(-q + x * (q - k))
    assert all(t.get("hoverinfo") == "skip" for t in fig["data"] if t["mode"] == "lines")


def test_a_window_of_a_deep_models_layers_names_the_models_layers_and_stays_small():
    rng = np.random.default_rng(0)
    weights = np.tril(rng.random((10, 9, 246, 246), dtype=np.float32))  # SmolLM2's layers 11-20 at its token cap
    weights /= weights.sum(-1, keepdims=True)
    grid = figs.head_grid(weights, first_layer=10)
    targets = grid.data[-1]
    assert targets.customdata[0] == [10, 0] and targets.customdata[-1] == [19, 8]  # a click opens L11 H1 .. L20 H9
    titles = [a.text for a in grid.layout.annotations]
    assert "L11" in titles and "L20" in titles and "L1" not in titles
    assert figs.payload_bytes(grid) < 400_000  # thumbnails, not 10 x 9 x 246 x 246 weights (21.8 MB as float32)


def test_blocked_cells_are_drawn_as_masked_not_as_zeros():
    weights = np.tril(np.full((3, 3), 0.5, dtype=np.float32))
    fig = figs.attention_heatmap(weights, ["a", "b", "c"], blocked=~np.tril(np.ones((3, 3), bool)))
    heat = fig.data[0]
    z = np.frombuffer(base64.b64decode(heat.z["bdata"]), dtype=np.float32).reshape(3, 3)  # sent as float32
    assert np.isnan(z[np.triu_indices(3, 1)]).all() and (z[np.tril_indices(3)] == 0.5).all()
    assert heat.hoverongaps is False and fig.layout.plot_bgcolor == figs.MASKED_COLOUR
