"""Korean on the Classifier's token strips (issue 40, item 9): Hangul fits its boxes (a syllable is
about one em, not an average Latin letter), a one-line strip's colour bar has room for its numbers,
and aligned strips have as many columns as their widest token allows."""

from __future__ import annotations

import numpy as np

from ui.figures.classifier import MIN_STRIP_LINES, columns_for, comparison_strips, token_strip
from ui.figures.common import WIDE_CHAR, text_width

TOKENS = ["배우들", "연기가", "정말", "좋았고", "마지막까지", "눈을", "뗄", "수", "없었", "##어요", "."]


def test_a_hangul_syllable_is_counted_as_wide():
    assert text_width("마지막까지") == 5 * WIDE_CHAR and text_width("movie") == 5
    assert text_width("##어요") == 2 + 2 * WIDE_CHAR


def test_korean_chips_are_as_wide_as_their_text_and_never_overlap():
    fig = token_strip(TOKENS, np.linspace(-2.4, 2.4, len(TOKENS)), "적분 경사", line_chars=80)
    boxes = [(s.x0, s.x1, s.y0) for s in fig.layout.shapes]
    for token, (x0, x1, _) in zip(TOKENS, boxes):
        assert x1 - x0 >= text_width(token) + 1  # "마지막까지": 9.75 units, was 6.6 (its 5 characters + 1.6)
    for (_, right, y_a), (left, _, y_b) in zip(boxes, boxes[1:]):
        assert y_a != y_b or right <= left


def test_a_one_line_strip_has_room_for_three_colour_bar_numbers():
    fig = token_strip(TOKENS, np.linspace(-2.4, 2.4, len(TOKENS)), "적분 경사", line_chars=80)
    assert fig.layout.height == 70 + 40 * MIN_STRIP_LINES  # 150 px: the bar is ~80 px tall (was 45 px for 5 numbers)
    bar = fig.data[1].marker.colorbar
    assert list(bar.ticktext) == ["-2.4", "0", "2.4"]


def test_aligned_strips_have_columns_wide_enough_for_their_widest_token():
    assert columns_for(["영화가", "재미있었다", "."]) == 7
    assert columns_for(["a", "b"]) == 12
    fig = comparison_strips(["영화가", "재미있었다", "."], ["영화가", "재미없었다", "."], [0.1, 2.0, 0.0],
                            [0.1, -2.0, 0.0], "t", ("첫째", "둘째"))  # fmt: skip
    assert np.asarray(fig.data[0].z).shape[1] == 7


KOREAN_LABELS = [f"{i}:{tok}" for i, tok in enumerate(TOKENS)]


def test_hangul_labels_that_do_not_fit_are_turned_with_room_between_them():
    from ui.figures.common import tick_angle

    assert tick_angle(KOREAN_LABELS, 900) == -45  # 82 px a label: "4:마지막까지" (100 px) does not fit flat
    assert tick_angle(KOREAN_LABELS, 300) == -90  # 27 px a label: slanted Hangul touched its neighbour
    assert tick_angle([f"{i}:the" for i in range(11)], 300) == -45  # Latin slanted at the same spacing is clear


def test_the_attention_heatmap_counts_its_query_labels_and_keeps_its_axis_title_clear():
    from ui.figures.attention import attention_heatmap
    from ui.figures.common import TITLE_STANDOFF

    n = len(TOKENS)
    fig = attention_heatmap(np.full((n, n), 1 / n), TOKENS, lang="ko")
    # 510 px figure - 100 px of query labels - 130 px of colour bar and title: 25 px a column
    assert fig.layout.xaxis.tickangle == -90
    assert fig.layout.xaxis.title.standoff == fig.layout.yaxis.title.standoff == TITLE_STANDOFF
    few = attention_heatmap(np.full((4, 4), 0.25), ["the", "movie", "was", "good"])
    assert few.layout.xaxis.tickangle == 0
