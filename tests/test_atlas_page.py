"""AppTest of the head atlas: every bundled model family gives a grid of roles, the numbers and a
head's heatmap; Korean; clicking is replaced by the head menus; an empty text gets a message."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app_helpers import array, figures, open_app, texts
from ui.atlas import atlas_models

MODELS = atlas_models()


def pick(at, name: str):
    at.selectbox(key="atlas_model").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def grid_of(at) -> dict:
    figs = figures(at)
    assert {"atlas-grid", "atlas-head"} <= set(figs)
    return figs


@pytest.mark.parametrize("family", ["classifier", "encoder-decoder", "vision", "language-model"])
def test_each_family_has_an_atlas(family):
    names = [n for n, f in MODELS.items() if f == family]
    if not names:
        pytest.skip(f"no bundled {family} model")
    at = pick(open_app("head_atlas"), names[0])
    figs = grid_of(at)
    grid = figs["atlas-grid"]["data"][0]
    cells = np.asarray(grid["text"], dtype=object)
    z = array(grid["z"])
    assert cells.shape == z.shape and cells.size >= 4
    table = at.dataframe[0].value
    assert len(table) % cells.shape[1] == 0 and len(table) >= cells.size  # every head; the grid: a window of layers
    assert cells.shape[0] == min(len(table) // cells.shape[1], 10) or len(table) == cells.size
    heat = array(figs["atlas-head"]["data"][0]["z"])
    finite = np.nan_to_num(heat)
    np.testing.assert_allclose(finite.sum(-1), 1.0, atol=1e-3)
    if family == "language-model":
        assert "induction" in table.columns
        assert np.isnan(heat[0, 1:]).all()  # the first row sees only the start token: the mask is drawn
    if family == "encoder-decoder":
        at.radio(key="atlas_part").set_value("cross").run()
        assert "alignment" in at.dataframe[0].value.columns
    if family == "vision":
        assert "local" in at.dataframe[0].value.columns


def test_the_head_menus_choose_the_heatmap_and_korean_works():
    at = open_app("head_atlas", lang="ko")
    assert at.title[0].value == "헤드 지도"
    at.selectbox(key="atlas_layer").set_value(2).run()
    at.selectbox(key="atlas_head").set_value(3).run()
    title = figures(at)["atlas-head"]["layout"]["title"]["text"]
    assert title.startswith("레이어 2, 헤드 3")
    assert not at.exception


def test_empty_text_gets_a_message():
    at = open_app("head_atlas")
    key = next(w.key for w in at.text_input if w.key.startswith("atlas_text"))
    at.text_input(key=key).set_value("   ").run()
    assert any("Type some text" in m for m in texts(at.info))
    assert "atlas-grid" not in figures(at)


def test_a_paste_over_the_limit_is_cut_and_said():
    at = open_app("head_atlas")
    key = next(w.key for w in at.text_input if w.key.startswith("atlas_text"))
    at.text_input(key=key).set_value("the movie was great . " * 150).run()  # 3,300 characters
    assert any("3,300 characters" in m and "2,000" in m for m in texts(at.warning))
    assert "atlas-grid" in figures(at)  # the first 2,000 characters are read, not the old text kept
