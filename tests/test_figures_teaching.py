"""Figure functions of the Positional encoding and Masks pages: pure numpy in, plotly Figure out."""

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from transformer.analysis.stepper import RowChange
from transformer.core.positional import sinusoidal_encoding, wavelengths
from ui.figures import masks as mf
from ui.figures import positional as pf
from ui.figures import stepper as sf
from ui.figures.common import contrast_ratio, legible, tick_angle, token_labels


def test_ordinals():
    assert [pf.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 103)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "103rd",
    ]


def test_thinning_keeps_at_most_the_limit():
    assert pf.thinning(100, 512) == 1 and pf.thinning(512, 512) == 1 and pf.thinning(513, 512) == 2
    assert pf.thinning(2048, 512) == 4 and len(range(0, 2049, pf.thinning(2049, 512))) <= 512
    assert pf.thinned_axes(100, 128) == "" and pf.thinned_axes(600, 10) == "every 2nd position"
    assert pf.thinned_axes(10, 1024) == "every 4th dimension"


def test_encoding_heatmap_draws_the_table_and_thins_large_ones():
    pe = sinusoidal_encoding(30, 10)
    fig = pf.encoding_heatmap(pe, "PE")
    assert isinstance(fig, go.Figure) and fig.layout.meta == "pe-heatmap"
    np.testing.assert_array_equal(fig.data[0].z, pe)
    assert (fig.data[0].zmin, fig.data[0].zmax, fig.data[0].zmid) == (-1, 1, 0)
    big = pf.encoding_heatmap(sinusoidal_encoding(2048, 1024), "PE")
    assert big.data[0].z.shape == (512, 256) and list(big.data[0].x[:2]) == [0, 4]
    assert "every 4th position, every 4th dimension" in big.layout.title.text


def test_default_dimensions_are_even_and_in_range():
    assert pf.default_dimensions(128) == [0, 16, 32, 64]
    for d in (1, 2, 3, 5, 1024):
        dims = pf.default_dimensions(d)
        assert dims[0] == 0 and all(x % 2 == 0 and x < d for x in dims)


def test_dimension_curves_follow_the_formula():
    pe, periods = sinusoidal_encoding(200, 8), wavelengths(8)
    fig = pf.dimension_curves(pe, [0, 3, 6], periods)
    assert [t.meta for t in fig.data] == [0, 3, 6]
    np.testing.assert_allclose(fig.data[2].y, np.sin(np.arange(200) / 10000 ** (6 / 8)), atol=1e-6)
    assert "cos" in fig.data[1].name and f"{periods[6]:,.1f}" in fig.data[2].name


def test_wavelengths_rise_geometrically():
    fig = pf.wavelength_figure(wavelengths(16, 100.0))
    y = np.asarray(fig.data[0].y)
    assert y[0] == pytest.approx(2 * math.pi) and fig.layout.yaxis.type == "log"
    assert np.allclose(y[2::2] / y[:-2:2], 100.0 ** (2 / 16))


@pytest.mark.parametrize("d_model", [2, 16, 64])
def test_similarity_depends_only_on_distance_for_even_d_model(d_model):
    pe = sinusoidal_encoding(60, d_model)
    cos, dot = pf.similarity(pe, "cosine"), pf.similarity(pe, "dot")
    np.testing.assert_allclose(np.diag(cos), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.diag(dot), d_model / 2, atol=1e-4)
    np.testing.assert_allclose(dot[:-7, :-7], dot[7:, 7:], atol=1e-4)
    np.testing.assert_allclose(cos, cos.T, atol=1e-6)


def test_similarity_heatmap_and_distance_profile():
    pe = sinusoidal_encoding(900, 32)
    heat = pf.similarity_heatmap(pe, "dot")
    assert heat.data[0].z.shape == (300, 300) and "every 3rd position" in heat.layout.title.text
    profile = pf.distance_profile(pe, "cosine")
    assert [t.meta for t in profile.data] == [0, 225, 450]
    lines = [np.asarray(t.y) for t in profile.data]
    np.testing.assert_allclose(lines[2], lines[0][: len(lines[2])], atol=1e-5)
    assert len(pf.distance_profile(sinusoidal_encoding(1, 4)).data) == 1  # one position: one start


def test_embedding_parts_share_one_colour_scale():
    tokens = np.array([[3.0, -1.0], [0.5, 0.5]])
    positions = sinusoidal_encoding(2, 2)
    fig = pf.embedding_parts(tokens, positions, tokens + positions, token_labels(["a", "<b>"]))
    assert [t.zmax for t in fig.data] == [3.0] * 3 and [t.zmin for t in fig.data] == [-3.0] * 3
    assert list(fig.data[0].y) == ["0:a", "1:&lt;b&gt;"]
    np.testing.assert_array_equal(fig.data[2].z, tokens + positions)


def test_norm_bars_and_the_size_sentence():
    fig = pf.norm_bars(["0:a", "1:b"], np.array([8.0, 6.0]), np.array([1.0, 1.0]), np.array([8.1, 6.1]))
    assert [t.name for t in fig.data] == ["token embedding", "positional encoding", "sum"]
    assert "words swamp the positions (7.0×)" in pf.size_caption("m", np.array([8.0, 6.0]), np.array([1.0, 1.0]))
    assert "positions swamp the words" in pf.size_caption("m", np.array([0.1]), np.array([5.0]))
    assert "similar size" in pf.size_caption("m", np.array([7.9]), np.array([5.7]))
    assert "positional part is zero" in pf.size_caption("m", np.array([1.0]), np.array([0.0]))


def test_mask_heatmap_levels_and_numbers():
    mask = np.array([[True, True, False], [True, True, False], [True, True, False]])
    fig = mf.mask_heatmap(mask, ["0:a", "1:b", "2:&lt;pad&gt;"], "m", ignored_rows=np.array([False, False, True]))
    np.testing.assert_array_equal(fig.data[0].z, [[2, 2, 0], [2, 2, 0], [1, 1, 0]])
    assert fig.data[0].text.tolist() == [["1", "1", "0"]] * 3
    changed = np.zeros((3, 3), bool)
    changed[0, 1] = True
    assert len(mf.mask_heatmap(mask, ["a", "b", "c"], "m", changed=changed).layout.shapes) == 1
    many = mf.mask_heatmap(np.ones((40, 40), bool), [str(i) for i in range(40)], "m", changed=np.ones((40, 40), bool))
    assert not many.layout.shapes and many.data[1].name == "changed" and np.nansum(many.data[1].z) == 1600
    assert mf.mask_heatmap(np.ones((13, 13), bool), [str(i) for i in range(13)], "m").data[0].text is None


def test_stage_heatmap_greys_blocked_cells():
    values = np.array([[1.0, -2.0], [0.5, 0.25]], dtype=np.float32)
    blocked = np.array([[False, True], [False, False]])
    fig = sf.stage_heatmap(values, ["0:a", "1:b"], ["0:a", "1:b"], "s", "stage-x", blocked=blocked)
    assert np.isnan(fig.data[0].z[0, 1]) and fig.data[0].z[1, 1] == 0.25
    assert fig.data[0].text[0, 1] == "" and fig.data[0].text[1, 0] == "0.50"
    assert fig.data[1].text[0, 1] == "−1e9" and np.isnan(fig.data[1].z[0, 0])
    weights = sf.stage_heatmap(values, ["a", "b"], ["a", "b"], "w", "w", blocked=blocked, weights=True)
    assert weights.data[1].text[0, 1] == "0" and weights.data[0].zmin == 0
    plain = sf.stage_heatmap(np.array([[-0.001]]), ["a"], ["a"], "p", "p")
    assert len(plain.data) == 1 and plain.data[0].text[0, 0] == "0.00"  # no "-0.00"


def test_query_walkthrough_and_weighted_sum():
    labels = ["0:a", "1:b", "2:c"]
    w = np.array([0.2, 0.8, 0.0])
    fig = sf.query_walkthrough(labels, 1, np.array([0.1, 1.5, 3.0]), w, np.array([False, False, True]))
    assert np.isnan(fig.data[0].y[2]) and list(fig.data[0].text) == ["0.10", "1.50", ""]
    assert list(fig.data[2].x) == ["2:c"] and list(fig.data[2].text) == ["−1e9"]  # written where the bar would be
    assert list(fig.data[1].y) == [0.2, 0.8, 0.0]
    v = np.array([[1.0, 2.0], [3.0, -1.0], [5.0, 5.0]])
    table = sf.weighted_sum_heatmap(labels, 1, w, v).data[0].z
    np.testing.assert_allclose(table[-1], w @ v) and np.testing.assert_allclose(table[1], 0.8 * v[1])


def test_padded_frame_writes_pad_and_unknown():
    frame = mf.padded_frame([["the", "zzz"], ["hi"]], np.array([[2, 0], [5, 1]]), [[False, True], [False]])
    assert frame.values.tolist() == [["2 the", "0 <unk> (zzz)"], ["5 hi", "1 <pad>"]]
    assert list(frame.index) == ["sentence 1", "sentence 2"]


def test_describe_changes_says_where_the_weight_went():
    before, after = np.array([0.5, 0.3, 0.2]), np.array([0.625, 0.375, 0.0])
    change = RowChange(0, [2], [], 0.2, before, after, 0.4)
    [line] = mf.describe_changes([change], mf.markdown_labels(["the", "cat", "sat"]))
    assert line.startswith("Query `0:the`: blocking key `2:sat` moved its 0.20 weight to the other keys")
    assert "`0:the` 0.50→0.62" in line and "output moved by 0.40" in line
    dead = RowChange(1, [0, 1, 2], [], 1.0, before, np.zeros(3), 1.0)
    assert "every key is blocked" in mf.describe_changes([dead], ["a", "b", "c"])[0]
    opened = RowChange(0, [], [2], 0.0, np.array([0.5, 0.5, 0.0]), np.array([0.4, 0.4, 0.2]), 0.1)
    assert "opening key c took 0.20" in mf.describe_changes([opened], ["a", "b", "c"])[0]
    assert mf.describe_changes([change] * 8, ["a", "b", "c"], limit=6)[-1] == "…and 2 more query rows changed."


def test_markdown_helpers():
    assert mf.md_code("a_b*") == "`a_b*`" and mf.md_code("x`y") == "``x`y``" and mf.md_code("`") == "`` ` ``"
    assert mf.markdown_labels(["<pad>", "cat"]) == ["`0:<pad>`", "`1:cat`"]
    assert (mf.fill_text(-1e9), mf.fill_text(-1e10)) == ("−1e9", "−1e10")


# Every figure of every page: explicit, large, dark fonts (Streamlit's theme must not be able to shrink or grey them).
def _all_figures():

    from ui.figures import attention as af
    from ui.figures import classifier as cf

    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(6), size=6).astype(np.float32)
    tokens = ["the", "movie", "was", "not", "good", "."]
    labels = token_labels(tokens)
    pe = sinusoidal_encoding(40, 16)
    scores = rng.normal(size=6)
    mask = np.tril(np.ones((6, 6), dtype=bool))
    return {
        "attention_heatmap": af.attention_heatmap(weights, tokens),
        "head_grid": af.head_grid(np.stack([np.stack([weights] * 2)] * 2)),
        "attention_lines": af.attention_lines(weights, tokens),
        "encoding_heatmap": pf.encoding_heatmap(pe),
        "dimension_curves": pf.dimension_curves(pe, [0, 2], wavelengths(16)),
        "wavelength_figure": pf.wavelength_figure(wavelengths(16)),
        "similarity_heatmap": pf.similarity_heatmap(pe),
        "distance_profile": pf.distance_profile(pe),
        "embedding_parts": pf.embedding_parts(pe[:6], pe[:6], pe[:6], labels),
        "norm_bars": pf.norm_bars(labels, scores, scores, scores),
        "mask_heatmap": mf.mask_heatmap(mask, labels, "mask"),
        "stage_heatmap": sf.stage_heatmap(weights, labels, labels, "stage", "stage", blocked=~mask, weights=True),
        "query_walkthrough": sf.query_walkthrough(labels, 1, scores, weights[1], ~mask[1]),
        "weighted_sum_heatmap": sf.weighted_sum_heatmap(labels, 1, weights[1], rng.normal(size=(6, 4))),
        "token_strip": cf.token_strip(tokens, scores, "strip"),
        "attribution_bars": cf.attribution_bars(tokens, scores, "bars"),
        "comparison_strips": cf.comparison_strips(tokens, tokens, scores, scores, "compare"),
        "head_effect_heatmap": cf.head_effect_heatmap(rng.random((2, 4)), rng.random(2), 0.5, "positive"),
        "ranking_bars": cf.ranking_bars(["L1 H1", "L2 H3"], np.array([0.2, -0.1]), "positive"),
        "probability_before_after": cf.probability_before_after(
            ["neg", "pos"], np.array([0.3, 0.7]), np.array([0.6, 0.4])
        ),
    }


def _fonts(fig) -> list[tuple[str, object]]:
    """(where, font) of every text a reader must read: title, visible axes' ticks and titles, colour bars, legend."""
    layout = fig.layout
    out = [("font", layout.font)]
    if layout.title.text:
        out.append(("title", layout.title.font))
    for name in layout:
        if name.startswith(("xaxis", "yaxis")) and layout[name] is not None and layout[name].visible is not False:
            out.append((f"{name}.tickfont", layout[name].tickfont))
            if layout[name].title.text:
                out.append((f"{name}.title", layout[name].title.font))
    for n, trace in enumerate(fig.data):
        if "colorbar" in trace and trace.showscale is not False:
            out.append((f"trace {n} colorbar", trace.colorbar.tickfont))
    if any(getattr(t, "showlegend", False) is not False for t in fig.data) and len(fig.data) > 1:
        out.append(("legend", layout.legend.font))
    return out


@pytest.mark.parametrize("scale", [1.0, 1.5])
def test_every_figure_sets_large_dark_fonts_explicitly(scale):
    for name, fig in _all_figures().items():
        if scale != 1.0:
            legible(fig, scale=scale)
        for where, font in _fonts(fig):
            assert font.size is not None and font.size >= 16 * scale - 0.5, f"{name} {where}: {font.size} px"
            assert font.color is not None, f"{name} {where}: no explicit colour"
            assert contrast_ratio(font.color) >= 7, f"{name} {where}: {font.color} on white"


def test_contrast_ratio_and_tick_angle():
    assert contrast_ratio("#111111") > 18 and contrast_ratio("#ffffff") == pytest.approx(1.0)
    assert contrast_ratio("#767676") == pytest.approx(4.54, abs=0.02)  # the classic AA grey
    assert tick_angle(["0:the", "1:movie"], 500) == 0
    assert tick_angle([f"{i}:token" for i in range(60)], 500) in (-45, -90)


def test_cell_numbers_thin_out_instead_of_colliding():
    values = np.full((10, 10), -0.45)
    assert sf.cell_decimals(values, 10, mf.FULL_WIDTH_PX) == 2
    assert sf.cell_decimals(values, 10, 30 * 10) is None  # 30 px cells: nothing fits, no numbers
    labels = [f"{i}:w" for i in range(10)]
    narrow = sf.stage_heatmap(values, labels, labels, "s", "s", width_px=300)
    wide = sf.stage_heatmap(values, labels, labels, "s", "s", width_px=mf.FULL_WIDTH_PX)
    assert narrow.data[0].text is None and wide.data[0].text[0][0] == "-0.45"
    six = mf.mask_heatmap(np.tril(np.ones((6, 6), dtype=bool)), labels[:6], "m")  # a third of the page
    assert six.data[0].text[5][0] == "1" and six.data[0].text[0][5] == "0"
    ten = mf.mask_heatmap(np.tril(np.ones((10, 10), dtype=bool)), labels, "m")
    assert ten.data[0].text is None  # 16 px cells: the colours say it, digits would be cramped
    assert mf.mask_heatmap(np.ones((10, 10), dtype=bool), labels, "m", width_px=600).data[0].text[0][0] == "1"


def test_similarity_axes_stay_within_the_data():
    pe = sinusoidal_encoding(100, 128)
    heat = pf.similarity_heatmap(pe)
    assert list(heat.layout.xaxis.range) == [-0.5, 99.5] and list(heat.layout.yaxis.range) == [99.5, -0.5]
    assert heat.data[0].zmin == -1 and heat.data[0].zmax == 1
    assert list(pf.distance_profile(pe).layout.yaxis.range) == [-1.05, 1.05]
    low, high = pf.distance_profile(pe, "dot").layout.yaxis.range
    assert high == pytest.approx(64 * 1.05, rel=1e-3)  # PE(p)·PE(p) = d_model / 2


def _masks_figures() -> dict[str, go.Figure]:
    """Every Masks figure, in the variants its page draws (numbers or not, blocked cells, changed cells)."""
    rng = np.random.default_rng(3)
    labels = token_labels(["the", "movie", "was", "not", "good", "<pad>"])
    mask = np.tril(np.ones((6, 6), dtype=bool))
    changed = np.zeros((6, 6), dtype=bool)
    changed[1, 0] = changed[4, 2] = True
    weights = rng.dirichlet(np.ones(6), size=6)
    long = token_labels([f"w{i}" for i in range(30)])
    return {
        "mask": mf.mask_heatmap(mask, labels, "m", ignored_rows=np.arange(6) == 5, changed=changed, lang="ko"),
        "mask_many_changes": mf.mask_heatmap(np.ones((30, 30), bool), long, "m", changed=np.ones((30, 30), bool)),
        "scores": sf.stage_heatmap(rng.normal(size=(6, 6)) * 9, labels, labels, "s", "stage-scores"),
        "weights": sf.stage_heatmap(weights, labels, labels, "w", "stage-weights", blocked=~mask, weights=True),
        "no_numbers": sf.stage_heatmap(rng.normal(size=(30, 30)), long, long, "s", "big", numbers=False),
        "walkthrough": sf.query_walkthrough(labels, 2, rng.normal(size=6), weights[2], ~mask[2], lang="ko"),
        "weighted_sum": sf.weighted_sum_heatmap(labels, 2, weights[2], rng.normal(size=(6, 4))),
    }


@pytest.mark.parametrize("scale", [1.0, 1.4])
def test_masks_figures_are_what_plotly_validation_would_make(scale):
    """The Masks figures are built without plotly's validation (it took most of their CPU): validating
    them must change nothing, at the page's scale and after presenter mode's ``legible``."""
    for name, fig in _masks_figures().items():
        validated = go.Figure(fig.to_dict())
        if scale != 1.0:
            legible(fig, scale)
            legible(validated, scale)
        assert json.loads(fig.to_json()) == json.loads(validated.to_json()), name


@pytest.mark.parametrize("rows", [5, 15, 20])
def test_presenter_fonts_keep_every_row_label_of_a_heatmap(rows):
    from ui.figures.attention import attention_heatmap
    from ui.figures.common import font_px, legible

    tokens = [f"w{i}" for i in range(rows)]
    plain = attention_heatmap(np.full((rows, rows), 1 / rows), tokens)
    before = plain.layout.height
    assert legible(plain, 1.0).layout.height == before and plain.layout.yaxis.dtick is None
    grown = legible(attention_heatmap(np.full((rows, rows), 1 / rows), tokens), 1.4)
    size = font_px(1.4)
    assert grown.layout.yaxis.dtick == 1  # plotly writes every row's label...
    assert grown.layout.height >= 160 + rows * size * 1.3 - 1  # ...each with a row at least 1.3 fonts tall
    assert legible(grown, 1.4).layout.height == grown.layout.height  # idempotent


def test_presenter_fonts_leave_a_long_heatmap_to_plotly():
    from ui.figures.attention import attention_heatmap
    from ui.figures.common import legible

    fig = legible(attention_heatmap(np.full((60, 60), 1 / 60), [f"w{i}" for i in range(60)]), 1.4)
    assert fig.layout.yaxis.dtick is None and fig.layout.height <= 980
