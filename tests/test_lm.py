"""The decoder-only language model: causal mask, cached = uncached decoding, sampling bounds, generation."""

import numpy as np
import pytest
import torch

from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.lm.cache import forward_cached
from transformer.lm.decode import MAX_STEPS, generate, next_token_probs
from transformer.lm.sampling import Sampling, filtered_probabilities

V = 200


def small_lm() -> DecoderLM:
    """A 3-layer model with seeded random weights, in eval mode on the CPU."""
    torch.manual_seed(0)
    lm = DecoderLM(lm_config(V, d_model=32, num_heads=4, num_layers=3, d_ff=64, max_len=48))
    init_weights(lm, std=0.2)  # large weights: sharp, varied attention, so a leak would show
    return lm.eval()


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    return small_lm()


def test_weights_above_the_diagonal_are_exactly_zero_in_every_layer(model):
    ids = torch.randint(3, V, (2, 40))
    out = model(ids, need_weights=True)
    assert len(out.attention) == 3
    upper = torch.ones(40, 40, dtype=torch.bool).triu(1)
    for record in out.attention:
        assert record.weights.shape == (2, 4, 40, 40)
        assert torch.all(record.weights[..., upper] == 0)
        torch.testing.assert_close(record.weights.sum(-1), torch.ones(2, 4, 40))


def test_a_later_token_never_changes_an_earlier_prediction(model):
    ids = torch.randint(3, V, (1, 20))
    changed = ids.clone()
    changed[0, 15] = (ids[0, 15] + 1 - 3) % (V - 3) + 3
    a, b = model(ids).logits, model(changed).logits
    torch.testing.assert_close(a[:, :15], b[:, :15])
    assert not torch.allclose(a[:, 15:], b[:, 15:])


def test_output_layer_is_tied_to_the_input_embedding(model):
    assert model.output.weight is model.embedding.tokens.weight


def cached_against_full_pass(model: DecoderLM) -> float:
    """Largest gap between the next-token probabilities of a cached decoding, one token at a time
    after a 7-token prompt, and of one full pass over 2 × 45 ids (on the model's device)."""
    ids = torch.randint(3, V, (2, 45), device=next(model.parameters()).device)
    with torch.no_grad():
        full = torch.softmax(model(ids).logits.double(), -1)
    step = forward_cached(model, ids[:, :7])
    parts = [step.logits]
    for t in range(7, 45):
        step = forward_cached(model, ids[:, t : t + 1], step.cache, need_weights=True)
        parts.append(step.logits)
        assert step.attention[0].shape == (2, 4, 1, t + 1)
    assert step.cache.length == 45
    return float((torch.softmax(torch.cat(parts, 1).double(), -1) - full).abs().max())


def test_cached_decoding_gives_the_probabilities_of_the_full_pass(model):
    assert cached_against_full_pass(model) <= 1e-5


def test_cached_weights_match_the_full_pass_rows(model):
    ids = torch.randint(3, V, (1, 30))
    with torch.no_grad():
        full = model(ids, need_weights=True).attention
    step = forward_cached(model, ids[:, :29])
    step = forward_cached(model, ids[:, 29:], step.cache, need_weights=True)
    for layer, record in enumerate(full):
        torch.testing.assert_close(step.attention[layer][0, :, 0], record.weights[0, :, -1], atol=1e-6, rtol=0)


def test_generation_with_and_without_cache_agrees(model):
    prompt = [2, 17, 50, 9]
    for sampling in (Sampling(), Sampling(greedy=False, temperature=1.3, top_k=40, top_p=0.9, seed=5)):
        cached = generate(model, prompt, 12, sampling, use_cache=True)
        plain = generate(model, prompt, 12, sampling, use_cache=False)
        assert cached.ids == plain.ids
        for a, b in zip(cached.steps, plain.steps):
            assert np.abs(a.top_probs - b.top_probs).max() <= 1e-5 and abs(a.chosen_prob - b.chosen_prob) <= 1e-5
            assert np.abs(a.attention - b.attention).max() <= 1e-5


def test_head_switched_off_matches_between_cache_and_full_pass(model):
    gates = torch.ones(3, 4)
    gates[0, 1] = 0
    gates[2] = 0
    prompt = [2, 5, 6, 7, 8]
    cached = generate(model, prompt, 5, head_mask=gates)
    plain = generate(model, prompt, 5, head_mask=gates, use_cache=False)
    assert cached.ids == plain.ids
    base = next_token_probs(model, prompt)
    off = next_token_probs(model, prompt, gates)
    assert np.abs(base - off).max() > 1e-4
    first = cached.steps[0]
    assert np.abs(off[first.top_ids] - first.top_probs).max() <= 1e-5
    assert np.array_equal(first.top_ids, np.argsort(-off, kind="stable")[: len(first.top_ids)])


def test_seeded_sampling_repeats_and_seeds_differ(model):
    prompt = [2, 30]
    runs = [generate(model, prompt, 20, Sampling(greedy=False, temperature=2.0, seed=s)).ids for s in (1, 1, 2)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_forcing_a_token_changes_the_continuation(model):
    prompt = [2, 11, 12]
    free = generate(model, prompt, 6)
    other = (free.steps[0].token_id + 1 - 3) % (V - 3) + 3
    forced = generate(model, prompt, 6, forced={0: other})
    assert forced.ids[3] == other and forced.steps[0].forced
    torch.testing.assert_close(torch.tensor(forced.steps[0].top_probs), torch.tensor(free.steps[0].top_probs))
    assert np.array_equal(forced.steps[0].top_ids, free.steps[0].top_ids)
    assert forced.ids[4:] != free.ids[4:]


def test_steps_are_bounded_by_the_context_and_the_limit(model):
    out = generate(model, [2, 3], 10_000)
    assert len(out.ids) == model.config.max_len and out.stopped == "context"
    assert MAX_STEPS >= model.config.max_len
    assert generate(model, [2, 3], 0).steps == []


def test_bad_prompts_get_clear_messages(model):
    with pytest.raises(ValueError, match="empty"):
        generate(model, [], 3)
    with pytest.raises(ValueError, match="at most 48"):
        generate(model, [5] * 49, 3)
    with pytest.raises(ValueError, match="context"):
        forward_cached(model, torch.ones(1, 49, dtype=torch.long))


def test_temperature_zero_is_greedy_and_huge_temperature_is_near_uniform():
    logits = torch.tensor([1.0, 3.0, 2.0, -1.0])
    zero = filtered_probabilities(logits, Sampling(greedy=False, temperature=0.0))
    assert zero.tolist() == [0.0, 1.0, 0.0, 0.0]
    hot = filtered_probabilities(logits, Sampling(greedy=False, temperature=1e6))
    assert np.allclose(hot.numpy(), 0.25, atol=1e-5) and abs(float(hot.sum()) - 1) < 1e-12


def test_top_k_and_top_p_keep_the_expected_tokens():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    top2 = filtered_probabilities(logits, Sampling(greedy=False, top_k=2))
    assert np.allclose(top2.numpy(), [0.625, 0.375, 0, 0])
    nucleus = filtered_probabilities(logits, Sampling(greedy=False, top_p=0.7))  # 0.5 + 0.3 reach 0.7
    assert np.allclose(nucleus.numpy(), [0.625, 0.375, 0, 0])
    only_top = filtered_probabilities(logits, Sampling(greedy=False, top_p=0.0))
    assert only_top.tolist() == [1.0, 0.0, 0.0, 0.0]
    every = filtered_probabilities(logits, Sampling(greedy=False, top_k=1000))
    assert np.allclose(every.numpy(), [0.5, 0.3, 0.15, 0.05])


@pytest.mark.parametrize(
    "settings",
    [dict(temperature=-1.0), dict(temperature=2e6), dict(top_p=1.5), dict(top_k=-2), dict(temperature=float("nan"))],
)
def test_out_of_range_settings_are_refused(settings):
    with pytest.raises(ValueError):
        Sampling(greedy=False, **settings)
