"""Fill in the blank: the probability axis stops at 100 %, and a head whose weights from the blank are
flat is said to have "no clear focus" instead of being given one word (issue 40, item 8)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.app_helpers import array, figures
from tests.test_page_fill_mask import KEY, models, open_page  # noqa: F401 - the fixture
from ui.figures.fill_mask import guess_bars, layer_head_focus
from ui.fill_mask import focus_floor, strongest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_probability_axis_ends_at_100_percent_and_a_full_bar_keeps_its_label():
    fig = guess_bars(["good", "bad"], [0.999, 0.001], 1)
    assert tuple(fig.layout.xaxis.range) == (0, 1)
    assert fig.data[0].text[0] == "99.9%" and fig.data[0].cliponaxis is False and fig.layout.margin.r >= 70


def test_the_focus_floor_is_twice_an_equal_share_and_at_least_a_fifth():
    assert focus_floor(10) == pytest.approx(0.2)  # ~0.1 on each of 10 tokens is flat
    assert focus_floor(40) == pytest.approx(0.2)  # 0.06 of 40 is not a focus either
    assert focus_floor(3) == pytest.approx(2 / 3)  # an even split over 3 tokens (0.33 each) is not one


def test_flat_heads_have_no_word_and_the_figure_says_no_clear_focus():
    tokens = [f"t{i}" for i in range(10)]
    flat = np.full(10, 0.1)
    sharp = np.full(10, 0.05)
    sharp[7] = 0.55
    attention = np.stack([np.stack([np.stack([flat, flat]), np.stack([flat, sharp])])])  # (L 1, H 2, T_q 2, T_k 10)
    result = SimpleNamespace(attention=attention, tokens=tokens, blanks=[SimpleNamespace(position=1)])
    weights, looked = strongest(result, 0)
    assert looked == [[None, "t7"]] and weights[0, 1] == pytest.approx(0.55)
    fig = layer_head_focus(weights, looked, "en")
    assert [list(row) for row in fig.data[0].text] == [["no clear<br>focus", "t7"]]
    assert layer_head_focus(weights, looked, "ko").data[0].text[0][0] == "뚜렷한<br>초점 없음"


def test_the_page_names_a_word_exactly_where_a_head_reaches_the_focus_floor(models):  # noqa: F811 - the fixture
    at = open_page({KEY: models["bert-mlm"][0]}, KEY)
    figs = figures(at)
    bars = figs["fill-mask-guesses-1"]["layout"]["xaxis"]["range"]
    assert bars == [0, 1]
    cells = [cell for row in figs["fill-mask-focus"]["data"][0]["text"] for cell in row]
    z = array(figs["fill-mask-focus"]["data"][0]["z"]).ravel()
    tokens = len(figs["fill-mask-heads"]["data"][0]["x"])
    named = [c != "no clear<br>focus" for c in cells]
    assert all((w >= focus_floor(tokens)) == n for w, n in zip(z, named))
