import math
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer import ModelConfig, analyze, build_model, load_model
from transformer.analysis.stepper import default_mask, head_steps, layer_input, mask_changes, positional_table
from transformer.bundle import LoadedModel
from transformer.core.masks import look_ahead_mask
from transformer.core.tokenizer import Vocab

BUNDLED = Path(__file__).resolve().parent.parent / "assets" / "models" / "imdb-sentiment"
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "barked", "i", "loved", "it"]


def tiny(**changes) -> LoadedModel:
    """A small random model (eval mode) over WORDS; changes go to its config."""
    torch.manual_seed(0)
    vocab = Vocab(["<unk>", "<pad>"] + WORDS)
    cfg = ModelConfig(vocab_size=len(vocab), d_model=16, num_heads=4, num_layers=3, d_ff=32, max_len=32, **changes)
    return LoadedModel(build_model(cfg).eval(), cfg, vocab, name="tiny")


@pytest.fixture(scope="module")
def bundled() -> LoadedModel:
    return load_model(BUNDLED)


def ids_of(result, index: int) -> torch.Tensor:
    return torch.from_numpy(result.ids[index : index + 1])


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"norm_first": True, "final_norm": True},
        {"positional": "learned", "norm_style": "std_eps"},
        {"positional": "none", "scale_embedding": True, "mask_fill": -1e10},
    ],
)
def test_weights_equal_the_models_own_for_every_layer_and_head(changes):
    loaded = tiny(**changes)
    result = analyze(loaded, ["the cat sat on the mat", "i loved it"])
    for index in (0, 1):
        n = int(result.lengths[index])
        for layer in range(3):
            for head in range(4):
                steps = head_steps(loaded, ids_of(result, index), layer, head)
                # the padded row of a shorter input: its real rows match the input analysed alone
                np.testing.assert_allclose(steps.weights[:n, :n], result.attention_for(index)[layer, head], atol=1e-5)
                np.testing.assert_allclose(steps.scaled, result.scores[index, layer, head], atol=1e-5)


def test_bundled_model_matches_analyze(bundled):
    result = analyze(bundled, ["the cat sat on the mat"])
    for layer in range(bundled.config.num_layers):
        for head in range(bundled.config.num_heads):
            steps = head_steps(bundled, ids_of(result, 0), layer, head)
            assert np.abs(steps.weights - result.attention_for(0)[layer, head]).max() <= 1e-5


def test_stages_follow_the_formula():
    loaded = tiny()
    ids = torch.tensor([[2, 3, 4, 5, 1, 1]])  # two <pad> at the end
    steps = head_steps(loaded, ids, 1, 2)
    d_k = loaded.config.head_dim
    assert steps.q.shape == steps.k.shape == steps.v.shape == (6, d_k) and steps.d_k == d_k
    for name in ("scores", "scaled", "masked", "weights"):
        assert getattr(steps, name).shape == (6, 6) and getattr(steps, name).dtype == np.float32
    np.testing.assert_allclose(steps.scores, steps.q @ steps.k.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(steps.scaled, steps.scores / math.sqrt(d_k), rtol=1e-5, atol=1e-5)
    assert (steps.masked[:, 4:] == np.float32(-1e9)).all()
    np.testing.assert_array_equal(steps.masked[:, :4], steps.scaled[:, :4])
    assert (steps.weights[:, 4:] == 0).all()  # <pad> keys get nothing
    np.testing.assert_allclose(steps.weights.sum(-1), 1.0, atol=1e-6)  # <pad> queries still attend
    np.testing.assert_allclose(steps.output, steps.weights @ steps.v, atol=1e-5)
    np.testing.assert_array_equal(steps.mask, default_mask(loaded, ids))


def test_mask_override_blocks_and_renormalises():
    loaded = tiny()
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    base = head_steps(loaded, ids, 0, 0)
    mask = np.ones((5, 5), dtype=bool)
    mask[1, 3] = False
    edited = head_steps(loaded, ids, 0, 0, mask)
    assert edited.weights[1, 3] == 0
    open_keys = [0, 1, 2, 4]
    expected = base.weights[1, open_keys] / base.weights[1, open_keys].sum()
    np.testing.assert_allclose(edited.weights[1, open_keys], expected, atol=1e-6)
    np.testing.assert_array_equal(edited.weights[[0, 2, 3, 4]], base.weights[[0, 2, 3, 4]])
    [change] = mask_changes(base, edited)
    assert (change.query, change.newly_blocked, change.newly_opened) == (1, [3], [])
    assert change.moved == pytest.approx(float(base.weights[1, 3]))
    assert change.output_shift == pytest.approx(float(np.linalg.norm(edited.output[1] - base.output[1])))


def test_look_ahead_and_a_fully_blocked_row():
    loaded = tiny()
    ids = torch.tensor([[2, 3, 4, 5]])
    causal = head_steps(loaded, ids, 2, 1, look_ahead_mask(4))
    assert np.triu(causal.weights, 1).max() == 0 and causal.weights[0, 0] == pytest.approx(1.0)
    mask = np.ones((4, 4), dtype=bool)
    mask[2] = False
    blocked = head_steps(loaded, ids, 2, 1, mask)
    assert (blocked.weights[2] == 0).all() and (blocked.output[2] == 0).all()


def test_fill_minus_1e10_gives_the_same_weights():
    loaded = tiny()
    ids = torch.tensor([[2, 3, 4, 1]])
    a, b = head_steps(loaded, ids, 1, 1, fill=-1e9), head_steps(loaded, ids, 1, 1, fill=-1e10)
    assert b.masked[0, 3] == np.float32(-1e10)
    np.testing.assert_array_equal(a.weights, b.weights)


def test_does_not_touch_the_model():
    loaded = tiny(norm_first=True)
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    head_steps(loaded, torch.tensor([[2, 3, 1]]), 2, 3, np.eye(3, dtype=bool))
    assert not loaded.model.training
    assert all(torch.equal(before[k], v) for k, v in loaded.model.state_dict().items())
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in loaded.model.modules())


def test_layer_input_of_layer_zero_is_the_embedding():
    loaded = tiny()
    ids = torch.tensor([[2, 3, 4]])
    result = analyze(loaded, ["the cat sat"])
    np.testing.assert_allclose(layer_input(loaded, ids, 0)[0].numpy(), result.embeddings[0], atol=1e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        ((torch.tensor([[2, 3]]), 3, 0), "layer must be"),
        ((torch.tensor([[2, 3]]), 0, 4), "head must be"),
        ((torch.tensor([2, 3]), 0, 0), "shape"),
        ((torch.zeros(1, 0, dtype=torch.long), 0, 0), "T >= 1"),
    ],
)
def test_bad_arguments_say_what_is_wrong(args, message):
    with pytest.raises(ValueError, match=message):
        head_steps(tiny(), *args)


def test_wrong_mask_shape_and_training_mode_are_refused():
    loaded = tiny()
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        head_steps(loaded, torch.tensor([[2, 3]]), 0, 0, np.ones((3, 3), dtype=bool))
    loaded.model.train()
    with pytest.raises(ValueError, match="eval mode"):
        head_steps(loaded, torch.tensor([[2, 3]]), 0, 0)


def test_positional_table_follows_the_config():
    sinus, learned, none = tiny(), tiny(positional="learned"), tiny(positional="none")
    table = positional_table(sinus)
    assert table.shape == (32, 16)
    np.testing.assert_allclose(table[:3], analyze(sinus, ["the cat sat"]).positional_encodings, atol=1e-6)
    np.testing.assert_array_equal(
        positional_table(learned), learned.model.encoder.embedding.positions.table.weight.detach().numpy()
    )
    assert positional_table(none) is None


def tiny_seq2seq(**changes) -> LoadedModel:
    """A small random encoder-decoder over WORDS (source and target share the vocabulary)."""
    torch.manual_seed(1)
    vocab = Vocab(["<unk>", "<pad>", "<s>", "</s>"] + WORDS)
    cfg = ModelConfig(
        kind="encoder-decoder",
        vocab_size=len(vocab),
        target_vocab_size=len(vocab),
        d_model=16,
        num_heads=4,
        num_layers=2,
        num_decoder_layers=2,
        d_ff=32,
        max_len=32,
        bos_id=2,
        eos_id=3,
        **changes,
    )
    return LoadedModel(build_model(cfg).eval(), cfg, vocab, target_vocab=vocab, name="tiny-s2s")


@pytest.mark.parametrize("changes", [{}, {"norm_first": True, "final_norm": True}])
def test_decoder_steps_equal_the_decoders_own_weights(changes):
    from transformer.analysis.stepper import decoder_head_steps

    loaded = tiny_seq2seq(**changes)
    result = analyze(loaded, ["the cat sat on the mat"], targets=["i loved it"])
    src = ids_of(result, 0)
    tgt = torch.tensor([[loaded.vocab.token_to_id(t) for t in result.decoder_tokens[0]]])
    m = tgt.shape[1]
    for layer in range(2):
        for head in range(4):
            steps = decoder_head_steps(loaded, src, tgt, layer, head)
            reference = result.decoder_self_attention[0, layer, head, :m, :m]
            np.testing.assert_allclose(steps.weights, reference, atol=1e-5)
            assert (np.triu(steps.weights, k=1) == 0).all()  # the look-ahead mask
            np.testing.assert_array_equal(steps.mask, np.tril(np.ones((m, m), dtype=bool)))
            assert (steps.masked[~steps.mask] == loaded.config.mask_fill).all()
            np.testing.assert_allclose(steps.scaled, steps.scores / math.sqrt(steps.d_k), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(steps.output, steps.weights @ steps.v, rtol=1e-5, atol=1e-6)


def test_decoder_steps_with_an_open_mask_can_peek_and_bad_arguments_are_refused():
    from transformer.analysis.stepper import decoder_head_steps

    loaded = tiny_seq2seq()
    src, tgt = torch.tensor([[4, 5, 6]]), torch.tensor([[2, 7, 8, 9]])
    open_mask = np.ones((4, 4), dtype=bool)
    peeking = decoder_head_steps(loaded, src, tgt, 1, 0, open_mask)
    assert (np.triu(peeking.weights, k=1) > 0).any()
    np.testing.assert_allclose(peeking.weights.sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="layer must be in 0 .. 1"):
        decoder_head_steps(loaded, src, tgt, 2, 0)
    with pytest.raises(ValueError, match="no decoder"):
        decoder_head_steps(tiny(), src, tgt, 0, 0)
    with pytest.raises(ValueError, match="must have shape"):
        decoder_head_steps(loaded, src, tgt, 0, 0, np.ones((3, 3), dtype=bool))
