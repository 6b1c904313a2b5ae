"""Learned position vectors (an imported BERT or GPT-2, a model trained with a learned table): the
Positional page keeps the sinusoid lab (a formula: it needs no model), says in one line that this model
does not use it, and shows the model's own vectors' cosine-similarity map."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app_helpers import figures
from tests.test_page_positional import open_page, plotly_array, tiny_model
from ui.figures.positional import MAX_SIMILARITY, learned_similarity


def cosine(table: np.ndarray) -> np.ndarray:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return unit @ unit.T


def test_the_map_is_the_cosine_similarity_of_the_position_vectors():
    table = np.random.default_rng(0).normal(size=(30, 16)).astype(np.float32)
    figure = learned_similarity(table)
    z = np.asarray(figure.data[0].z, dtype=np.float64)
    np.testing.assert_allclose(z, cosine(table.astype(np.float64)), atol=1e-6)
    assert np.allclose(np.diag(z), 1) and np.allclose(z, z.T)
    assert "30 positions × 16" in figure.layout.title.text and figure.layout.meta == "pe-learned-map"


def test_a_long_table_is_thinned_and_the_title_says_so():
    table = np.random.default_rng(1).normal(size=(1000, 8)).astype(np.float32)
    figure = learned_similarity(table, lang="ko")
    z = np.asarray(figure.data[0].z)
    assert z.shape[0] == z.shape[1] <= MAX_SIMILARITY
    assert list(figure.data[0].x[:2]) == [0, 3] and "<br>" in figure.layout.title.text
    assert "코사인 유사도" in figure.layout.title.text


def test_the_page_keeps_the_sinusoids_says_the_model_learned_its_positions_and_maps_them():
    loaded = tiny_model("learned")
    at = open_page("the cat sat", {"upload: tiny-learned": loaded}, model="upload: tiny-learned")
    assert not at.exception
    shown = figures(at)
    assert {"pe-learned-map", "pe-heatmap", "pe-curves", "pe-similarity"} <= set(shown)
    table = loaded.model.encoder.embedding.positions.table.weight.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(plotly_array(shown["pe-learned-map"]["data"][0]["z"]), cosine(table), atol=1e-5)
    assert any("20 learned vectors" in m.value for m in at.markdown)
    [line] = [i.value for i in at.info if "selected model" in i.value]
    assert "tiny-learned" in line and "does not use these sinusoids" in line and "up to 20" in line
    assert at.number_input(key="pe_base").value == 10000.0


@pytest.mark.parametrize(
    ("positional", "said"),
    [
        ("sinusoidal", "adds exactly these sinusoids (d_model = 8, base = 10000)"),
        ("none", "no** positions at all"),
        ("rotary", "**turns** its queries and keys by their positions (rotary, base 10000)"),
    ],
)
def test_every_model_keeps_the_sinusoid_lab_and_one_line_says_what_it_uses(positional, said):
    key = f"upload: tiny-{positional}"
    at = open_page("the cat sat", {key: tiny_model(positional)}, model=key)
    assert "pe-heatmap" in figures(at) and "pe-learned-map" not in figures(at)
    assert [i.value for i in at.info if "selected model" in i.value and said in i.value]
