"""AppTest of the Vision page on the bundled vision models: each control changes what is shown."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.app_helpers import ROOT, array, figures, open_app

DIGITS = ROOT / "assets" / "models" / "vit-digits"
SHAPES = ROOT / "assets" / "models" / "vit-shapes"
pytestmark = pytest.mark.skipif(not DIGITS.is_dir(), reason="the bundled vision models are not there")


def heat(fig: dict, trace: int | None = None) -> np.ndarray:
    """The attention values of a figure's heatmap (trace ``trace``, or its first heatmap)."""
    if trace is None:
        trace = next(i for i, d in enumerate(fig["data"]) if d.get("type") == "heatmap")
    return array(fig["data"][trace]["z"]).astype(float)


def vision(**query):
    return open_app("vision", **query)


def test_digit_page_shows_picture_prediction_and_attention():
    at = vision()
    figs = figures(at)
    for meta in (
        "vision-image",
        "vision-probabilities",
        "vision-overlay",
        "vision-head-grid",
        "vision-position-similarity",
        "vision-filters",
        "vision-patch-1",
    ):
        assert meta in figs, meta
    probs = array(figs["vision-probabilities"]["data"][0]["y"])
    assert probs.shape == (10,) and probs.sum() == pytest.approx(1.0, abs=1e-4)
    assert at.metric[0].value == "0"  # the first held-out "0" is read as a 0
    overlay = heat(figs["vision-overlay"])
    assert overlay.shape == (4, 4) and (overlay >= 0).all() and overlay.sum() <= 1.0 + 1e-5
    grid = figs["vision-head-grid"]
    assert len(grid["data"]) == 2 * 4 * 4  # picture + heat map for 4 layers × 4 heads
    assert at.title[0].value == "Vision Transformer"


def test_layer_head_and_view_change_the_overlay():
    at = vision()
    first = heat(figures(at)["vision-overlay"])
    at.selectbox(key="vlayer").set_value(1).run()
    layer1 = heat(figures(at)["vision-overlay"])
    assert not np.allclose(first, layer1)
    at.selectbox(key="vhead").set_value(3).run()
    head3 = heat(figures(at)["vision-overlay"])
    assert not np.allclose(layer1, head3)
    grid = figures(at)["vision-head-grid"]
    heads = [heat(grid, 2 * h + 1) for h in range(4)]  # layer 1's four heads, each scaled to its maximum
    np.testing.assert_allclose(heads[2], head3 / head3.max(), atol=1e-5)
    at.radio(key="vview").set_value("mean").run()
    mean = heat(figures(at)["vision-overlay"])
    layer1_heads = [heads[h] for h in range(4)]
    assert mean.shape == (4, 4) and not np.allclose(mean, head3)
    assert mean.sum() <= 1 + 1e-5 and all(h.shape == (4, 4) for h in layer1_heads)
    at.radio(key="vview").set_value("rollout").run()
    rollout = heat(figures(at)["vision-overlay"])
    assert not np.allclose(rollout, mean) and "Rollout" in figures(at)["vision-overlay"]["layout"]["title"]["text"]


def test_picking_a_digit_and_a_patch_changes_what_is_shown():
    at = vision()
    image0 = array(figures(at)["vision-image"]["data"][0]["z"])
    at.selectbox(key="vdigit").set_value("7").run()
    assert not np.array_equal(array(figures(at)["vision-image"]["data"][0]["z"]), image0)
    assert at.metric[0].value == "7"
    before = heat(figures(at)["vision-patch-1"])
    at.selectbox(key="vprow").set_value(1).run()
    at.selectbox(key="vpcol").set_value(1).run()
    after = figures(at)["vision-patch-1"]
    assert not np.allclose(before, heat(after))
    assert after["layout"]["shapes"][0]["x0"] == pytest.approx(-0.5)  # the outline sits on patch (1, 1)


def test_switching_heads_off_shows_the_change():
    at = vision()
    assert "vision-ablation" not in figures(at)
    at.multiselect(key="voff").set_value([(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]).run()
    fig = figures(at)["vision-ablation"]
    base, ablated = array(fig["data"][0]["y"]), array(fig["data"][1]["y"])
    assert not np.allclose(base, ablated)
    assert any("Prediction with all heads" in m.value for m in at.markdown)


def test_random_picture_changes_with_the_button():
    at = vision()
    at.radio(key="vsource").set_value("random").run()
    first = array(figures(at)["vision-image"]["data"][0]["z"])
    at.button(key="vrandom_next").click().run()
    assert not np.array_equal(array(figures(at)["vision-image"]["data"][0]["z"]), first)


@pytest.mark.skipif(not SHAPES.is_dir(), reason="no bundled segmenter")
def test_segmenter_shows_masks_iou_and_made_scenes():
    at = vision()
    at.selectbox(key="vmodel").set_value("vit-shapes").run()
    figs = figures(at)
    assert "vision-masks" in figs and "vision-probabilities" not in figs
    predicted, true = array(figs["vision-masks"]["data"][0]["z"]), array(figs["vision-masks"]["data"][1]["z"])
    assert predicted.shape == true.shape == (32, 32)
    table = at.table[0].value
    assert list(table.iloc[:, 0]) == ["background", "circle", "square", "triangle"]
    at.multiselect(key="voff").set_value([(0, h) for h in range(4)] + [(1, h) for h in range(4)]).run()
    ablation = figures(at)["vision-ablation"]
    assert len([d for d in ablation["data"] if d["type"] == "heatmap"]) == 2
    assert any("pixels changed class" in m.value for m in at.markdown)
    at.radio(key="vsource").set_value("scene").run()
    at.multiselect(key="vkinds").set_value(["triangle"]).run()
    true = array(figures(at)["vision-masks"]["data"][1]["z"])
    assert set(np.unique(true)) == {0, 3}


def _png(array_: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array_).save(buffer, "PNG")
    return buffer.getvalue()


def test_uploads_are_converted_or_refused_with_a_message():
    at = vision()
    at.radio(key="vsource").set_value("upload").run()
    assert any("Upload a picture" in m.value for m in at.info)
    at.file_uploader(key="vupload").upload("notes.png", b"not a picture at all", "image/png").run()
    assert any("not a picture that can be read" in e.value for e in at.error)
    page = np.full((40, 30), 255, dtype=np.uint8)
    page[8:32, 12:17] = 0  # a dark "1" on white
    at.file_uploader(key="vupload").upload("one.png", _png(page), "image/png").run()
    assert not at.error
    captions = " ".join(c.value for c in at.caption)
    assert "30 × 40" in captions and "inverted" in captions
    assert "vision-overlay" in figures(at)


def test_korean_page():
    at = vision(lang="ko")
    assert at.title[0].value.startswith("비전 트랜스포머")
    assert figures(at)["vision-probabilities"]["layout"]["title"]["text"] == "클래스별 확률"


def test_in_korean_the_shape_classes_are_korean():
    from tests.app_helpers import figures as by_meta
    from tests.app_helpers import open_app

    at = open_app("vision", lang="ko", vmodel="vit-shapes")
    masks = by_meta(at).get("vision-masks")
    assert masks is not None, list(by_meta(at))
    assert masks["data"][-1]["colorbar"]["ticktext"] == ["배경", "원", "정사각형", "삼각형"]
    assert list(at.table[0].value.iloc[:, 0]) == ["배경", "원", "정사각형", "삼각형"]  # IoU per class
