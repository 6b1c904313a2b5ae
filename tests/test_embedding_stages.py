"""The Positional encoding page's input stages (ui.embedding_stages): the plain sum of the parts, the
LayerNorm's output kept apart from it, and a learned table's colour scale."""

import numpy as np
import torch

from ui.embedding_stages import colour_limit, embedding_stages


def test_the_sum_is_the_parts_added_and_a_layernorm_output_is_kept_apart():
    rng = np.random.default_rng(0)
    tokens, positions = rng.normal(size=(5, 8)), 0.4 * rng.normal(size=(5, 8))
    segment = 0.1 * rng.normal(size=8)
    summed = tokens + positions + segment
    normed = torch.nn.functional.layer_norm(torch.from_numpy(summed), (8,)).numpy() * 3.0
    stages = embedding_stages(tokens, positions, normed, segment)
    np.testing.assert_array_equal(stages.summed, summed)
    np.testing.assert_array_equal(stages.normed, normed)
    norms = stages.norms()
    assert set(norms) == {"tokens", "positions", "summed", "normed"}
    np.testing.assert_allclose(norms["normed"], np.full(5, 3.0 * np.sqrt(8)), rtol=1e-3)  # every token one size
    # a model without a LayerNorm: its first layer reads the sum itself, drawn once
    plain = embedding_stages(tokens, positions, tokens + positions)
    assert plain.normed is None and plain.segment is None and set(plain.norms()) == {"tokens", "positions", "summed"}
    # a projection to another width (ALBERT-style) is never the sum
    assert embedding_stages(tokens, positions, rng.normal(size=(5, 4))).normed.shape == (5, 4)


def test_a_learned_tables_colours_span_its_bulk_not_its_outliers():
    table = np.full((100, 10), 0.02)
    table[0, 0] = 1.9  # one outlier, as in minilm's table
    assert colour_limit(table) == 0.02
    assert colour_limit(np.zeros((0, 4))) == 1.0 and colour_limit(np.zeros((3, 4))) > 0
