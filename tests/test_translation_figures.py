"""The Translate page's figure functions: shapes, masked cells, gold markers, fonts, Korean text."""

from __future__ import annotations

import numpy as np

from ui.figures import translation as figs


def test_cross_heatmap_marks_the_gold_alignment_and_sets_fonts():
    weights = np.full((3, 4), 0.25)
    fig = figs.cross_attention_heatmap(weights, ["a", "cat", "eats", "rice"], ["고양이", "가", "<eos>"], [1, None, None],
                                       2, 3, 0.5)  # fmt: skip
    heat, gold = fig.data
    assert heat.z.shape == (3, 4) and list(heat.y) == ["0:고양이", "1:가", "2:&lt;eos&gt;"]
    assert list(gold.x) == ["1:cat"] and list(gold.y) == ["0:고양이"]
    assert "layer 2, head 3" in fig.layout.title.text and "50%" in fig.layout.title.text
    assert fig.layout.font.size >= 16 and fig.layout.font.color == "#111111"
    assert fig.layout.xaxis.tickfont.size >= 16 and fig.layout.xaxis.tickfont.color == "#111111"
    korean = figs.cross_attention_heatmap(weights, list("abcd"), list("xyz"), lang="ko")
    assert korean.layout.title.text.startswith("교차 어텐션")


def test_look_ahead_heatmap_blanks_the_upper_triangle_and_numbers_the_new_row():
    matrix = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    fig = figs.look_ahead_heatmap(matrix, ["<bos>", "오늘", "곰", "은"])
    z = np.array(fig.data[0].z, dtype=float)
    upper = np.triu(np.ones((4, 4), dtype=bool), 1)
    assert np.isnan(z[upper]).all() and np.allclose(z[~upper], matrix[~upper])
    text = np.array(fig.data[0].text)
    assert list(text[-1]) == ["0.25"] * 4 and (text[:-1] == "").all()
    assert len(fig.layout.shapes) == upper.sum() + 1  # one grey cell per masked key, one outline
    assert fig.layout.annotations[0].font.size >= 16


def test_head_scores_and_bars():
    scores = np.array([[0.5, np.nan], [1.0, 0.25]])
    fig = figs.head_scores_heatmap(scores)
    assert [list(r) for r in fig.data[0].text] == [["50%", "—"], ["100%", "25%"]]
    assert fig.data[0].textfont.color == "#111111"
    bars = figs.cross_row_bars(np.array([0.1, 0.7, 0.2]), ["a", "b", "c"], gold=1)
    assert list(bars.data[0].marker.color) == [figs.CHOSEN_COLOUR, figs.GOLD_COLOUR, figs.CHOSEN_COLOUR]
    probs = np.array([0.1, 0.6, 0.05, 0.25])
    top = figs.top_k_bars(probs, ["w", "x", "y", "z"], chosen=3, k=3)
    assert list(top.data[0].y) == ["x", "z", "w"]
    assert list(top.data[0].marker.color) == [figs.OTHER_COLOUR, figs.CHOSEN_COLOUR, figs.OTHER_COLOUR]
    assert top.layout.uniformtext.minsize >= 16


def test_the_outlined_rows_numbers_never_run_together():
    from ui.figures.common import CHAR_WIDTH
    from ui.figures.translation import row_numbers

    row = np.array([0.05, 0.05, 0.07, 0.1, 0.2, 0.13, 0.1, 0.1, 0.1, 0.1])
    for n, plot_px in ((4, 380), (10, 380), (10, 200)):
        labels = row_numbers(row[:n] / row[:n].sum(), plot_px)
        cell = plot_px / n
        fits = all(len(text) * CHAR_WIDTH * 16 + 8 <= cell for text in labels if text)
        apart = all(not (a and b) for a, b in zip(labels, labels[1:]))  # or no two labels side by side
        assert fits or apart, (n, labels)
        assert sum(bool(text) for text in labels) >= min(n, 3)
    assert row_numbers(np.array([0.25, 0.75]), 380) == ["0.25", "0.75"]
    assert row_numbers(row, 380)[:3] == [".05", ".05", ".07"]  # ten cells of 38 px: no leading zero
