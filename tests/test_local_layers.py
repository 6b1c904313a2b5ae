"""Local (sliding-window) layers of the decoder-only model: a layer listed in ``local_layers`` lets query t see
keys t - local_window + 1 .. t only; the full pass, the key/value cache, the residual stream and the
step-by-step head view all apply the same mask; bad settings are refused."""

import pytest
import torch

from transformer.bundle import LoadedModel
from transformer.core.config import ModelConfig
from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.core.masks import layer_look_ahead_mask, look_ahead_mask
from transformer.lm.cache import forward_cached
from transformer.lm.steps import lm_head_steps
from transformer.residual import trace

torch.set_num_threads(1)


def _model(window: int = 2, layers: tuple[int, ...] = (0,), **changes) -> DecoderLM:
    torch.manual_seed(0)
    config = lm_config(50, d_model=32, num_heads=4, num_layers=2, d_ff=48, max_len=24, positional="rotary",
                       norm_style="rms", gated_ffn=True, activation="silu", num_kv_heads=2,
                       local_window=window, local_layers=layers, **changes)  # fmt: skip
    model = DecoderLM(config)
    init_weights(model)
    return model.eval()


def test_a_local_layers_mask_keeps_the_last_window_keys_and_other_layers_keep_all():
    config = _model(window=2).config
    local = layer_look_ahead_mask(config, 0, 5)
    expected = torch.tensor([[i - 1 <= j <= i for j in range(5)] for i in range(5)])
    assert torch.equal(local, expected)
    assert torch.equal(layer_look_ahead_mask(config, 1, 5), look_ahead_mask(5))
    # two new tokens after three cached ones: positions 3 and 4 see keys 2..3 and 3..4
    cached = layer_look_ahead_mask(config, 0, 2, past=3)
    assert cached.tolist() == [[False, False, True, True, False], [False, False, False, True, True]]


def test_the_forward_pass_attends_only_inside_the_window():
    model = _model(window=3)
    ids = torch.randint(3, 50, (2, 12), generator=torch.Generator().manual_seed(1))
    out = model(ids, need_weights=True)
    first, second = out.attention[0].weights, out.attention[1].weights  # (B, H, T, T)
    t = torch.arange(12)
    outside = (t[:, None] - t[None, :] >= 3) | (t[None, :] > t[:, None])
    assert torch.all(first[..., outside] == 0) and torch.all(first[..., ~outside] > 0)
    torch.testing.assert_close(first.sum(-1), torch.ones(2, 4, 12))
    assert torch.all(second[..., t[:, None] - t[None, :] >= 3] > 0)  # the global layer still looks far back


def test_a_window_as_long_as_the_context_changes_nothing():
    ids = torch.randint(3, 50, (1, 20), generator=torch.Generator().manual_seed(2))
    plain, local = _model(window=0, layers=()), _model(window=24, layers=(0, 1))
    torch.testing.assert_close(plain(ids).logits, local(ids).logits, atol=1e-6, rtol=0)


def test_a_window_of_one_sees_only_the_token_itself():
    model = _model(window=1)
    weights = model(torch.randint(3, 50, (1, 9)), need_weights=True).attention[0].weights
    assert torch.equal(weights, torch.eye(9).expand_as(weights))


def test_cached_decoding_equals_the_full_pass_with_a_local_layer():
    model = _model(window=2, layers=(0,))
    ids = torch.randint(3, 50, (1, 18), generator=torch.Generator().manual_seed(3))
    full = model(ids, need_weights=True)
    out = forward_cached(model, ids[:, :7], need_weights=True)
    logits = [out.logits]
    for t in range(7, 18):
        out = forward_cached(model, ids[:, t : t + 1], out.cache, need_weights=True)
        logits.append(out.logits)
        for layer in range(2):
            torch.testing.assert_close(
                out.attention[layer][0, :, 0], full.attention[layer].weights[0, :, t, : t + 1], atol=1e-5, rtol=0
            )
    torch.testing.assert_close(torch.cat(logits, 1), full.logits, atol=1e-5, rtol=0)


def test_the_residual_stream_and_the_head_steps_use_the_local_mask():
    model = _model(window=2)
    ids = torch.randint(3, 50, (1, 10), generator=torch.Generator().manual_seed(4))
    full = model(ids, need_weights=True)
    traced = trace(model, ids)
    for layer in range(2):
        torch.testing.assert_close(traced.attention[layer].weights, full.attention[layer].weights, atol=1e-6, rtol=0)
    torch.testing.assert_close(model.final_norm(traced.streams[-1][None]), full.hidden, atol=1e-5, rtol=0)
    loaded = LoadedModel(model=model, config=model.config, vocab=None, splitter=None)
    steps = lm_head_steps(loaded, ids, layer=1, head=2)
    torch.testing.assert_close(torch.as_tensor(steps.weights), full.attention[1].weights[0, 2], atol=1e-6, rtol=0)
    steps = lm_head_steps(loaded, ids, layer=0, head=1)
    torch.testing.assert_close(torch.as_tensor(steps.weights), full.attention[0].weights[0, 1], atol=1e-6, rtol=0)


def test_the_config_keeps_its_local_layers_through_json():
    config = _model(window=2, layers=(0,)).config
    again = ModelConfig.from_dict(config.to_dict())
    assert again.local_window == 2 and again.local_layers == (0,)
    assert again == config


@pytest.mark.parametrize(
    "changes",
    [
        dict(local_window=0, local_layers=(0,)),  # a local layer needs a window
        dict(local_window=2, local_layers=(2,)),  # only layers 0 and 1 exist
        dict(local_window=-1, local_layers=()),
    ],
)
def test_impossible_local_layers_are_refused(changes):
    with pytest.raises(ValueError, match="local_"):
        lm_config(50, d_model=32, num_heads=4, num_layers=2, d_ff=48, max_len=24, **changes)


def test_only_a_language_model_has_local_layers():
    with pytest.raises(ValueError, match="local_layers needs a language model"):
        ModelConfig(kind="classifier", label_names=("a", "b"), local_window=2, local_layers=(0,))


def test_the_pages_caption_names_the_local_layers_and_their_window():
    from ui.language_models import local_layers_caption

    assert local_layers_caption(_model(window=0, layers=()).config) is None
    text = local_layers_caption(_model(window=2, layers=(0,)).config)
    assert "layer 1" in text and "last 2 pieces" in text
