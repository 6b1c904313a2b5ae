"""Attributions (rollout, gradient × input, integrated gradients), head switch-off, comparison."""

import numpy as np
import pytest
import torch

from transformer.analysis.ablation import head_effects, head_mask, masked_probabilities
from transformer.analysis.rollout import attention_rollout
from transformer.bundle import load_bundle
from transformer.core.model import SequenceClassifier, pool
from transformer.text.attribution import (
    align_tokens,
    attribute,
    class_scores,
    compare,
    gradient_x_input,
    integrated_gradients,
    quadrature,
    rank_correlation,
    rollout_scores,
    sentence_ids,
    top_tokens,
)

from .conftest import tiny_config


def smooth_model(**changes) -> SequenceClassifier:
    """A random classifier whose logit is smooth along the IG path (GELU, mean pooling)."""
    torch.manual_seed(1)
    cfg = tiny_config(**{"activation": "gelu", "pooling": "mean", "vocab_size": 40, **changes})
    return SequenceClassifier(cfg).eval()


def ids_of(*rows: list[int], pad: int = 1) -> torch.Tensor:
    longest = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (longest - len(r)) for r in rows])


@pytest.mark.parametrize("rule", ["gauss-legendre", "trapezoid"])
def test_integrated_gradients_sum_to_the_logit_difference(rule):
    model = smooth_model()
    ids = ids_of([5, 9, 12, 7, 30, 22])
    ig = integrated_gradients(model, ids, torch.tensor([1]), steps=50, rule=rule)
    emb = model.encoder.embedding.token_embeddings(ids)
    with torch.no_grad():
        f_x = model(ids).logits[0, 1]
        f_b = model(ids, token_embeddings=torch.zeros_like(emb)).logits[0, 1]
    delta = float(f_x - f_b)
    total = float(ig.attributions.sum())
    assert float(ig.delta[0]) == pytest.approx(delta, abs=1e-5)
    assert float(ig.error[0]) == pytest.approx(abs(total - delta), abs=1e-6)
    assert abs(total - delta) < 0.01 * abs(delta)


def test_single_logit_model_explains_minus_z_for_class_zero():
    model = smooth_model(single_logit=True, label_names=("negative", "positive"))
    ids = ids_of([5, 9, 12])
    pos = integrated_gradients(model, ids, torch.tensor([1]))
    neg = integrated_gradients(model, ids, torch.tensor([0]))
    torch.testing.assert_close(neg.attributions, -pos.attributions)
    logits = torch.tensor([[2.0], [2.0]])
    assert class_scores(logits, torch.tensor([1, 0])).tolist() == [2.0, -2.0]


def test_linear_model_attributions_are_exact():
    # No layers + mean pooling + linear head: logit = w · mean(emb + pos) + b, so d logit / d emb_t = w / n
    torch.manual_seed(2)
    model = SequenceClassifier(tiny_config(num_layers=0, pooling="mean", vocab_size=40)).eval()
    ids = ids_of([4, 8, 15, 16])
    emb = model.encoder.embedding.token_embeddings(ids).detach()
    w = model.classifier.weight[1].detach()
    expected = (emb @ w) / ids.shape[1]  # (1, T)
    torch.testing.assert_close(gradient_x_input(model, ids, torch.tensor([1])), expected)
    ig = integrated_gradients(model, ids, torch.tensor([1]), steps=3)
    torch.testing.assert_close(ig.attributions, expected)
    assert float(ig.error[0]) < 1e-5


def test_padded_batch_gives_the_same_attributions_as_each_sentence_alone():
    model = smooth_model()
    short, long = [5, 9, 12], [7, 3, 22, 30, 11, 6]
    batch = ids_of(short, long)
    targets = torch.tensor([1, 0])
    gxi = gradient_x_input(model, batch, targets)
    ig = integrated_gradients(model, batch, targets, steps=20)
    for row, seq in enumerate((short, long)):
        alone = ids_of(seq)
        torch.testing.assert_close(
            gxi[row, : len(seq)], gradient_x_input(model, alone, targets[row : row + 1])[0], atol=1e-5, rtol=1e-4
        )
        ig_alone = integrated_gradients(model, alone, targets[row : row + 1], steps=20)
        torch.testing.assert_close(ig.attributions[row, : len(seq)], ig_alone.attributions[0], atol=1e-5, rtol=1e-4)
    assert gxi[0, len(short) :].abs().max() == 0
    assert ig.attributions[0, len(short) :].abs().max() == 0


def test_attributions_leave_the_shared_model_untouched(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    flags = [p.requires_grad for p in loaded.model.parameters()]
    attribute(loaded, "the movie was great", steps=8)
    _, ids = sentence_ids(loaded, "not good")
    head_effects(loaded.model, ids, 1)
    assert not loaded.model.training
    assert all(p.grad is None for p in loaded.model.parameters())
    assert [p.requires_grad for p in loaded.model.parameters()] == flags
    for key, value in loaded.model.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_rollout_rows_sum_to_one_and_pooled_scores_follow_the_pooling():
    rng = np.random.default_rng(0)
    raw = rng.random((3, 2, 5, 5))
    attention = raw / raw.sum(-1, keepdims=True)
    joint = attention_rollout(attention)
    np.testing.assert_allclose(joint.sum(-1), 1.0, atol=1e-6)
    mean_scores = rollout_scores(attention, "mean_max")
    np.testing.assert_allclose(mean_scores, joint[-1].mean(0), atol=1e-6)
    np.testing.assert_allclose(rollout_scores(attention, "first"), joint[-1][0], atol=1e-6)
    assert mean_scores.sum() == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(rollout_scores(np.zeros((0, 2, 4, 4)), "mean"), np.full(4, 0.25))


def test_attribute_on_a_bundle_has_one_score_per_token(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    attr = attribute(loaded, "the movie was not good", steps=50)
    assert attr.tokens == ["the", "movie", "was", "not", "good"]
    for scores in (attr.rollout, attr.grad_input, attr.integrated):
        assert scores.shape == (5,)
    assert attr.target == attr.predicted
    assert attr.ig_error == pytest.approx(abs(attr.integrated.sum() - attr.ig_delta), abs=1e-5)
    other = attribute(loaded, "the movie was not good", target=1 - attr.target, steps=50)
    assert other.target_label != attr.target_label
    with pytest.raises(ValueError, match="Unknown class"):
        attribute(loaded, "good", target="neutral")


def test_switching_off_every_head_of_a_layer_zeroes_its_attention_output():
    model = smooth_model(pooling="mean_max")
    ids = ids_of([5, 9, 12, 7], [3, 4])
    gated = model(ids, head_mask=head_mask(2, 4, layers_off=[0])).logits
    # manual forward: layer 0's attention sublayer adds exactly 0, everything else as usual
    mask = (ids != 1)[:, None, None, :].expand(-1, 1, ids.shape[1], -1)
    x, _ = model.encoder.embedding(ids)
    first = model.encoder.layers[0]
    x, _ = first.attn_block(x, lambda h: (torch.zeros_like(h), None))
    x, _ = first.ffn_block(x, lambda h: (first.ffn(h), None))
    x, _ = model.encoder.layers[1](x, mask)
    manual = model.classifier(pool(x, ids != 1, "mean_max"))
    torch.testing.assert_close(gated, manual)


def test_batched_gate_sets_match_one_forward_each():
    model = smooth_model()
    ids = ids_of([5, 9, 12, 7, 30])
    masks = torch.stack(
        [
            head_mask(2, 4),
            head_mask(2, 4, heads_off=[(1, 2)]),
            head_mask(2, 4, layers_off=[1]),
            head_mask(2, 4, heads_off=[(0, 0), (0, 3)]),
        ]
    )
    together = masked_probabilities(model, ids, masks)
    for row, gates in enumerate(masks):
        with torch.no_grad():
            alone = model.probabilities(model(ids, head_mask=gates).logits)[0].numpy()
        np.testing.assert_allclose(together[row], alone, atol=1e-6)
    with torch.no_grad():
        plain = model.probabilities(model(ids).logits)[0].numpy()
    np.testing.assert_allclose(together[0], plain, atol=1e-5)
    assert not np.allclose(together[2], together[0])


def test_head_effects_rank_single_heads_and_layers():
    model = smooth_model()
    ids = ids_of([5, 9, 12, 7, 30])
    effects = head_effects(model, ids, target=1)
    assert effects.heads.shape == (2, 4) and effects.layers.shape == (2,)
    expected = masked_probabilities(model, ids, head_mask(2, 4, heads_off=[(1, 3)]))[0, 1]
    assert effects.heads[1, 3] == pytest.approx(expected, abs=1e-6)
    ranking = effects.ranking("positive")
    assert len(ranking) == 2 * 4 + 2
    changes = [abs(r["change"]) for r in ranking]
    assert changes == sorted(changes, reverse=True)
    layer_row = next(r for r in ranking if r["switched off"] == "layer 2, all heads")
    assert layer_row["p(positive)"] == pytest.approx(effects.layers[1])
    with pytest.raises(ValueError, match="No head"):
        head_mask(2, 4, heads_off=[(2, 0)])


def test_quadrature_weights_integrate_polynomials():
    for rule, exact_degree in (("gauss-legendre", 19), ("trapezoid", 1)):
        alphas, weights = quadrature(10, rule)
        assert weights.sum() == pytest.approx(1.0)
        assert (alphas >= 0).all() and (alphas <= 1).all()
        assert (weights * alphas**exact_degree).sum() == pytest.approx(1 / (exact_degree + 1))
    with pytest.raises(ValueError, match="at least 1 step"):
        quadrature(0, "trapezoid")


def test_align_tokens_uses_a_diff_not_positions():
    assert align_tokens(["good"], ["not", "good"]) == [(None, 0), (0, 1)]
    assert align_tokens(["a", "great", "film"], ["a", "bad", "film", "!"]) == [(0, 0), (1, 1), (2, 2), (None, 3)]
    assert align_tokens(["x", "y"], []) == [(0, None), (1, None)]


def test_compare_explains_both_sentences_for_the_same_class(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    comp = compare(loaded, "good", "not good", steps=10)
    assert comp.a.target == comp.b.target == comp.a.predicted
    tokens_a, tokens_b, scores_a, scores_b = comp.aligned("integrated")
    assert tokens_a == ["", "good"] and tokens_b == ["not", "good"]
    assert np.isnan(scores_a[0]) and scores_a[1] == pytest.approx(comp.a.integrated[0])
    assert scores_b.tolist() == pytest.approx(comp.b.integrated.tolist())


def test_rank_correlation_and_top_tokens():
    a = np.array([0.1, 0.5, 0.3, 0.9])
    assert rank_correlation(a, a * 3 + 1) == pytest.approx(1.0)
    assert rank_correlation(a, -a) == pytest.approx(-1.0)
    assert rank_correlation(np.array([1.0, 2, 2, 3]), np.array([1.0, 2, 2, 3])) == pytest.approx(1.0)
    assert np.isnan(rank_correlation(a, np.ones(4)))
    assert np.isnan(rank_correlation(a[:1], a[:1]))
    assert top_tokens(["a", "b", "c"], np.array([0.1, -0.7, 0.3]), k=2) == [(1, "b", -0.7), (2, "c", 0.3)]


def test_log_odds_of_two_classes_is_the_logit_difference_and_flips_with_the_class():
    logits = torch.tensor([[0.5, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(class_scores(logits, torch.tensor([1, 1]), "log-odds"), [1.5, -4.0])
    np.testing.assert_allclose(class_scores(logits, torch.tensor([0, 0]), "log-odds"), [-1.5, 4.0])
    three = torch.tensor([[1.0, 2.0, 3.0]])
    p = torch.softmax(three, -1)[0, 2]
    assert float(class_scores(three, torch.tensor([2]), "log-odds")) == pytest.approx(float(torch.log(p / (1 - p))))
    with pytest.raises(ValueError, match="score must be one of"):
        class_scores(logits, torch.tensor([0, 0]), "probability")


def test_log_odds_attributions_of_one_class_are_minus_those_of_the_other(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    pos = attribute(loaded, "the movie was not good", target="positive", score="log-odds", steps=40)
    neg = attribute(loaded, "the movie was not good", target="negative", score="log-odds", steps=40)
    np.testing.assert_allclose(pos.integrated, -neg.integrated, atol=1e-5)
    np.testing.assert_allclose(pos.grad_input, -neg.grad_input, atol=1e-5)
    probs = pos.probabilities
    assert pos.ig_end == pytest.approx(float(np.log(probs[1] / probs[0])), abs=1e-4)
    assert pos.ig_delta == pytest.approx(pos.ig_end - pos.ig_start, abs=1e-5)


@pytest.mark.parametrize("baseline", ["zero", "pad", "unk"])
def test_every_baseline_starts_from_its_own_embedding_and_sums_to_the_difference(tiny_bundle, baseline):
    loaded = load_bundle(tiny_bundle)
    attr = attribute(loaded, "the movie was great", "positive", baseline=baseline, score="log-odds", steps=60)
    model, vocab = loaded.model, loaded.vocab
    _, ids = sentence_ids(loaded, "the movie was great")
    fill = {"pad": vocab.pad_id, "unk": vocab.unk_id}.get(baseline)
    emb = model.encoder.embedding.token_embeddings(ids)
    base = (
        torch.zeros_like(emb) if fill is None else model.encoder.embedding.token_embeddings(torch.full_like(ids, fill))
    )
    with torch.no_grad():
        z = model(ids, token_embeddings=base).logits[0]
    assert attr.ig_start == pytest.approx(float(z[1] - z[0]), abs=1e-4)
    assert attr.ig_error < 0.02 * max(abs(attr.ig_delta), 1e-3)
