"""Generate's records bounded by construction (issue 55): a step keeps its top tokens, never a
distribution over the vocabulary; attention rows only up to a budget per generation (the rest recomputed
for the step asked); the masks section computes one layer's matrices, not every layer's."""

from __future__ import annotations

import numpy as np
import torch

from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.lm import decode
from transformer.lm.decode import KEEP_TOP, generate, step_rows
from transformer.lm.inspect import layer_attention


def _model(vocab: int = 60) -> DecoderLM:
    torch.manual_seed(5)
    model = DecoderLM(lm_config(vocab, d_model=16, num_heads=2, num_layers=3, d_ff=24, max_len=48)).eval()
    init_weights(model, 0.3)
    return model


def test_a_step_record_does_not_grow_with_the_vocabulary():
    small, large = _model(60), _model(50_000)
    for model in (small, large):
        step = generate(model, [3, 4, 5, 6], 2).steps[-1]
        assert step.top_ids.shape == step.top_probs.shape == step.top_filtered.shape == (KEEP_TOP,)
        assert step.attention.shape == (3, 2, 5)
        assert step.nbytes == KEEP_TOP * 24 + 3 * 2 * 5 * 4  # 20 ids and two float64 columns, the rows
    with torch.no_grad():
        probs = torch.softmax(large(torch.tensor([[3, 4, 5, 6]])).logits[0, -1].double(), -1)
    first = generate(large, [3, 4, 5, 6], 1).steps[0]
    order = torch.argsort(probs, descending=True, stable=True)[:KEEP_TOP]
    assert np.array_equal(first.top_ids, order.numpy()) and np.allclose(
        first.top_probs, probs[order].numpy(), atol=1e-6
    )
    assert first.chosen_rank == 0 and first.chosen_prob == first.top_probs[0]


def test_rows_past_the_budget_are_dropped_and_recomputed_the_same(monkeypatch):
    model = _model()
    gates = torch.ones(3, 2)
    gates[1, 0] = 0
    whole = generate(model, [3, 9, 4], 8, head_mask=gates)
    per_step = 3 * 2 * 4  # floats in the first step's rows (3 layers, 2 heads, 3 keys)
    monkeypatch.setattr(decode, "ROWS_BUDGET", 4 * (per_step + (per_step + 6) + (per_step + 12)))  # three steps
    bounded = generate(model, [3, 9, 4], 8, head_mask=gates)
    assert bounded.ids == whole.ids
    assert [s.attention is not None for s in bounded.steps] == [True] * 3 + [False] * 5
    for step, full in zip(bounded.steps, whole.steps):
        rows = step_rows(model, bounded.ids[: step.position], gates)
        assert rows.shape == full.attention.shape and np.abs(rows - full.attention).max() <= 1e-5


def test_one_layers_matrices_equal_the_forward_pass():
    model = _model()
    gates = torch.ones(3, 2)
    gates[0, 1] = 0
    ids = [3, 9, 4, 7, 7, 2]
    with torch.no_grad():
        full = model(torch.tensor([ids]), need_weights=True, head_mask=gates)
    for layer in range(3):
        got = layer_attention(model, ids, layer, gates)
        assert got.shape == (2, 6, 6)
        assert np.abs(got - full.attention[layer].weights[0].numpy()).max() <= 1e-6


def test_the_prompt_is_read_without_attention_matrices(monkeypatch):
    from transformer.core import multihead

    queries = []
    real = multihead.attention_weights

    def counted(q, k, *args, **kwargs):
        queries.append(q.shape[-2])  # rows of the weights computed: the queries of this call
        return real(q, k, *args, **kwargs)

    monkeypatch.setattr(multihead, "attention_weights", counted)
    out = generate(_model(), list(range(3, 40)), 3)
    assert len(out.steps) == 3 and out.steps[0].attention.shape == (3, 2, 37)
    assert queries and set(queries) == {1}  # one row per layer and step, never the prompt's 37 x 37


def test_a_prompt_read_in_chunks_gives_the_same_generation(monkeypatch):
    model, prompt = _model(), list(range(3, 40))
    whole = generate(model, prompt, 4)
    monkeypatch.setattr(decode, "PROMPT_CHUNK", 5)
    chunked = generate(model, prompt, 4)
    assert chunked.ids == whole.ids
    for a, b in zip(whole.steps, chunked.steps):
        assert np.abs(a.top_probs - b.top_probs).max() <= 1e-5 and np.abs(a.attention - b.attention).max() <= 1e-5
