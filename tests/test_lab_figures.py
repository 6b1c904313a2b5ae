"""The Train page's figures (ui.figures.train): pure functions of numpy arrays, in both languages."""

import numpy as np

from ui.figures import train as figs
from ui.i18n import translate


def test_attention_grid_has_one_heatmap_per_head_with_the_tokens_on_both_axes():
    rng = np.random.default_rng(0)
    weights = rng.random((3, 2, 5, 5))
    weights /= weights.sum(-1, keepdims=True)
    tokens = ["<|endoftext|>", "1", "1", ">", "1"]
    fig = figs.attention_grid(weights, tokens, "en", step=40)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 6
    np.testing.assert_array_equal(heatmaps[3].z, weights[1, 1])  # layer 2, head 2: row-major over the grid
    # repeated tokens kept apart; < and > escaped once (plotly reads tick labels as HTML)
    assert list(heatmaps[0].x) == ["0:&lt;|endoftext|&gt;", "1:1", "2:1", "3:&gt;", "4:1"]
    assert fig.layout.title.text == translate("train.fig_attention_title", "en", step=40)
    assert sum(bool(t.showscale) for t in heatmaps) == 1


def test_curves_show_loss_accuracy_and_mark_the_chosen_snapshot():
    fig = figs.training_curves([0, 10, 20], [3.0, 2.0, 1.0], [0.1, 0.5, 0.9], [0.0, 0.1, 0.6], "ko", marked=10)
    assert [list(t.y) for t in fig.data] == [[3.0, 2.0, 1.0], [0.1, 0.5, 0.9], [0.0, 0.1, 0.6]]
    titles = [a.text for a in fig.layout.annotations]
    assert translate("train.fig_loss", "ko") in titles and translate("train.fig_accuracy", "ko") in titles
    assert [s.x0 for s in fig.layout.shapes] == [10, 10]


def test_head_scores_have_one_line_per_head_in_each_panel_and_one_legend_entry():
    induction = np.linspace(0, 1, 3 * 2 * 4).reshape(3, 2, 4)
    fig = figs.head_score_curves([0, 5, 10], induction, 1 - induction, "en")
    assert len(fig.data) == 2 * 4 * 2
    assert sum(bool(t.showlegend) for t in fig.data) == 8
    left = [t for t in fig.data if t.xaxis == "x"]
    np.testing.assert_allclose(left[5].y, induction[:, 1, 1])  # layer 2, head 2
    assert left[5].name == translate("train.fig_head_name", "en", layer=2, head=2)
