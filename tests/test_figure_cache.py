"""The shared figure store (ui.figure_cache): the same inputs give the very figure a fresh build gives,
any different input (an array's values, the language, the presenter scale) gives another, and what
cannot be digested exactly is built as usual."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import ui.figure_cache as fc
from tests.app_helpers import open_app
from ui.figures import classifier as classifier_figures
from ui.figures import vision as vision_figures


@pytest.fixture
def in_page(monkeypatch):
    """Calls behave as during a page run, in the language and at the font scale the test sets."""
    context = {"lang": "en", "scale": 1.0}
    monkeypatch.setattr(fc, "_session_context", lambda: (context["lang"], context["scale"]))
    fc.figure_store().__init__(fc.FIGURE_CACHE_BYTES)  # empty
    return context


def spec_json(fig: go.Figure) -> str:
    return pio.to_json(fig.to_dict(), validate=False)


def test_a_shared_figure_is_the_figure_a_fresh_build_gives(in_page):
    figs = fc.shared_figures(classifier_figures)
    heads, layers = np.array([[0.2, 0.7], [0.5, 0.4]]), np.array([0.1, 0.9])
    first = figs.head_effect_heatmap(heads, layers, 0.5, "positive", "ko")
    again = figs.head_effect_heatmap(heads.copy(), layers.copy(), 0.5, "positive", "ko")
    fresh = classifier_figures.head_effect_heatmap(heads, layers, 0.5, "positive", "ko")
    assert isinstance(first, fc.SharedFigure) and isinstance(again, fc.SharedFigure)
    assert spec_json(first) == spec_json(again) == spec_json(fresh)
    assert len(fc.figure_store()) == 1  # the second call built nothing


def test_any_different_input_builds_another_figure(in_page):
    figs = fc.shared_figures(classifier_figures)
    heads, layers = np.array([[0.2, 0.7], [0.5, 0.4]]), np.array([0.1, 0.9])
    base = spec_json(figs.head_effect_heatmap(heads, layers, 0.5, "positive"))
    changed = heads.copy()
    changed[1, 1] = 0.41
    assert spec_json(figs.head_effect_heatmap(changed, layers, 0.5, "positive")) != base
    assert spec_json(figs.head_effect_heatmap(heads.astype(np.float32), layers, 0.5, "positive")) != base
    assert "레이어" in spec_json(figs.head_effect_heatmap(heads, layers, 0.5, "positive", "ko"))
    in_page["scale"] = 1.4  # presenter mode: larger fonts, built at that scale
    presenting = json.loads(spec_json(figs.head_effect_heatmap(heads, layers, 0.5, "positive")))
    assert presenting["layout"]["font"]["size"] > json.loads(base)["layout"]["font"]["size"]
    assert len(fc.figure_store()) == 5


def test_outside_a_page_and_with_undigestable_arguments_the_figure_is_built_as_usual(in_page, monkeypatch):
    def titled(title) -> go.Figure:
        return go.Figure(layout={"title": {"text": str(title)}})

    class Title:  # no exact digest: the figure is built every time
        def __str__(self) -> str:
            return "a title"

    figure = fc.shared(titled, "tests.titled")
    assert fc.figure_key("tests.titled", (Title(),), {}, "en", 1.0) is None
    assert type(figure(Title())) is go.Figure and len(fc.figure_store()) == 0
    assert isinstance(figure("a title"), fc.SharedFigure) and len(fc.figure_store()) == 1
    monkeypatch.setattr(fc, "_session_context", lambda: None)
    built = fc.shared_figures(vision_figures).image_figure(np.zeros((1, 8, 8), dtype=np.float32), "a caption")
    assert type(built) is go.Figure and len(fc.figure_store()) == 1


def test_a_shared_figure_cannot_be_handed_to_a_function_that_edits_figures(in_page):
    figs = fc.shared_figures(classifier_figures)
    shared = figs.head_effect_heatmap(np.ones((1, 2)), np.ones(1), 0.5, "positive")
    with pytest.raises(TypeError, match="shared figure"):
        figs.head_effect_heatmap(shared, np.ones(1), 0.5, "positive")


def test_a_second_session_on_the_same_page_reuses_the_first_sessions_figures():
    first = open_app("vision", lang="en")
    kept = len(fc.figure_store())
    assert kept >= 5
    second = open_app("vision", lang="en")
    assert len(fc.figure_store()) == kept  # nothing built again
    specs = [[el.proto.spec for el in at.get("plotly_chart")] for at in (first, second)]
    assert specs[0] == specs[1]


def test_a_function_that_returns_no_figure_gives_its_value_and_is_not_digested_again(in_page, monkeypatch):
    calls = []

    def labels(names: list[str]) -> list[str]:
        calls.append(names)
        return [n.upper() for n in names]

    shared = fc.shared(labels, "tests.labels")
    assert shared(["a", "b"]) == ["A", "B"]
    monkeypatch.setattr(fc, "figure_key", lambda *a: pytest.fail("digested again"))
    assert shared(["c"]) == ["C"] and calls == [["a", "b"], ["c"]] and len(fc.figure_store()) == 0
