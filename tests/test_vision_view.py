"""The Vision page's decisions as pure functions (ui/vision_view.py, issue 51 item 3) and its filters
figure's title clear of the component labels (issue 50, item 5)."""

from __future__ import annotations

import numpy as np

from ui.figures.vision import TITLE_ROOM, filters_figure
from ui.vision_view import (
    attention_map,
    download_arrays,
    head_labels,
    iou_table,
    metrics_text,
    names,
    picture_sources,
    top_classes,
)


def test_picture_sources_fit_the_model():
    assert picture_sources(False, True, False) == ["test", "random", "upload", "camera", "draw"]
    assert picture_sources(True, False, False) == ["test", "random", "upload", "camera", "scene"]
    assert picture_sources(False, True, True) == ["upload", "camera"]
    korean, english = names("source_", ("test", "draw"), "ko"), names("source_", ("test", "draw"), "en")
    assert english == {"test": "Test picture", "draw": "Draw"} and korean.keys() == english.keys() and korean != english


def test_the_attention_map_of_each_view():
    rng = np.random.default_rng(0)
    attention = rng.random((2, 3, 5, 5))  # layers, heads, 1 + 4 patches
    attention /= attention.sum(-1, keepdims=True)
    one, title = attention_map(attention, "cls", 1, 2, 2, "en")
    assert one.shape == (2, 2) and np.allclose(one.ravel(), attention[1, 2, 0, 1:]) and "head 3" in title
    mean, _ = attention_map(attention, "mean", 0, 0, 2, "en")
    assert np.allclose(mean.ravel(), attention[0, :, 0, 1:].mean(0))
    assert attention_map(attention, "rollout", 1, 0, 2, "ko")[0].shape == (2, 2)


def test_texts_of_the_prediction_and_the_model_card():
    assert top_classes(np.array([0.1, 0.7, 0.2]), ["a", "b", "c"], 2) == "**b** 70.0 %, **c** 20.0 %"
    assert metrics_text(None, True, "en") == ""
    said = metrics_text({"test": {"accuracy": 0.981}, "splits": {"test": 1797}}, True, "en")
    assert "98.1" in said and "1797" in said.replace(",", "")
    labels = head_labels(2, 3, "en")
    assert len(labels) == 6 and labels[(1, 2)].endswith("3") and "2" in labels[(1, 2)]
    table = iou_table(["circle", "square"], np.array([0.5, np.nan]), "en")
    assert list(table.values()) == [["circle", "square"], ["0.500", "—"]]


def test_download_arrays_hold_the_first_picture():
    class Result:
        images, patches = np.zeros((2, 1, 8, 8)), np.zeros((2, 4, 16))
        attention, probabilities = np.zeros((2, 1, 1, 5, 5)), np.zeros((2, 3))
        label_names, tokens, mask = ["a", "b", "c"], ["[CLS]", "p1"], None

    arrays = download_arrays(Result())
    assert (
        arrays["image"].shape == (1, 8, 8) and "mask" not in arrays and list(arrays["label_names"]) == ["a", "b", "c"]
    )


def test_the_filters_title_sits_above_the_component_labels():
    """The title is pinned to the top of the figure and the top margin holds it and the first row's
    two-line labels: its lines end above where the labels start (fonts in px, 1.25 line height)."""
    components, explained = np.random.default_rng(1).normal(size=(14, 1, 4, 4)), np.linspace(0.2, 0.01, 14)
    fig = filters_figure(components, explained, "en")
    title = fig.layout.title
    assert title.yref == "container" and title.y == 1 and title.yanchor == "top"
    title_lines = title.text.count("<br>") + 1
    title_bottom = (title.pad.t or 0) + title_lines * 1.25 * title.font.size
    label = fig.layout.annotations[0]
    label_top = TITLE_ROOM - (label.text.count("<br>") + 1) * 1.25 * label.font.size
    assert fig.layout.margin.t == TITLE_ROOM and title_bottom < label_top, (title_bottom, label_top)
