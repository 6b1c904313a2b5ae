"""The core's decoder options of the Llama family: rotary positions (halves, interleaved, partial),
RMSNorm, SwiGLU, grouped-query attention and no biases, each against transformers' modules or a
hand-written formula; the key/value cache with all of them; old configs unchanged."""

import json
import math

import pytest
import torch
from transformers import GPTNeoXConfig, LlamaConfig
from transformers.models.gpt_neox import modeling_gpt_neox as neox
from transformers.models.llama import modeling_llama as llama

from transformer.core.config import ModelConfig
from transformer.core.decoder import DecoderLM, init_weights, lm_config
from transformer.core.layers import FeedForward, RMSNorm
from transformer.core.model import build_model
from transformer.core.multihead import MultiHeadAttention, kv_head_of
from transformer.core.positional import RotaryEmbedding
from transformer.lm.cache import forward_cached

torch.set_num_threads(1)
GEN = torch.Generator().manual_seed(0)


def _randn(*shape):
    return torch.randn(*shape, generator=GEN)


def test_rms_norm_equals_llamas_and_the_formula():
    x = _randn(2, 5, 16) * 3
    ours = RMSNorm(16, 1e-6)
    theirs = llama.LlamaRMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.copy_(_randn(16))
        theirs.weight.copy_(ours.weight)
    formula = ours.weight * x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6)
    assert torch.allclose(ours(x), formula, atol=1e-5)
    assert [n for n, _ in ours.named_parameters()] == ["weight"]  # no bias, no mean


def test_swiglu_equals_llamas_mlp():
    config = LlamaConfig(hidden_size=16, num_attention_heads=2, intermediate_size=40, hidden_act="silu")
    theirs = llama.LlamaMLP(config)
    ours = FeedForward(16, 40, 0.0, "silu", gated=True, bias=False)
    ours.load_state_dict(
        {
            "gate.weight": theirs.gate_proj.weight,
            "linear1.weight": theirs.up_proj.weight,
            "linear2.weight": theirs.down_proj.weight,
        }
    )
    x = _randn(3, 7, 16)
    gate, up = x @ theirs.gate_proj.weight.T, x @ theirs.up_proj.weight.T
    by_hand = (gate * torch.sigmoid(gate) * up) @ theirs.down_proj.weight.T  # down(silu(gate x) * up x)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6) and torch.allclose(ours(x), by_hand, atol=1e-5)


def _llama_rotated(x: torch.Tensor, theta: float, start: int) -> torch.Tensor:
    """transformers' Llama rotary applied to x (B, H, T, d) at positions start .."""
    b, h, t, d = x.shape
    config = LlamaConfig(hidden_size=h * d, num_attention_heads=h, rope_theta=theta)
    rope = llama.LlamaRotaryEmbedding(config)
    cos, sin = rope(x, torch.arange(start, start + t)[None])
    return llama.apply_rotary_pos_emb(x, x, cos, sin)[0]


@pytest.mark.parametrize(("theta", "start"), [(10000.0, 0), (500.0, 37)])
def test_rotary_halves_equals_llamas(theta, start):
    x = _randn(2, 3, 6, 16)
    ours = RotaryEmbedding(16, theta, "halves")(x, start)
    assert torch.allclose(ours, _llama_rotated(x, theta, start), atol=1e-5)


def test_partial_rotary_equals_gpt_neoxs():
    x = _randn(1, 2, 9, 16)
    config = GPTNeoXConfig(hidden_size=32, num_attention_heads=2, rotary_pct=0.25, rotary_emb_base=1000)
    rope = neox.GPTNeoXRotaryEmbedding(config)
    cos, sin = rope(x, torch.arange(9)[None])
    theirs = neox.apply_rotary_pos_emb(x, x, cos, sin)[0]
    ours = RotaryEmbedding(4, 1000.0, "halves")(x)
    assert torch.allclose(ours, theirs, atol=1e-5)
    assert torch.equal(ours[..., 4:], x[..., 4:])  # the dimensions past the rotary ones pass unchanged


def test_rotary_interleaved_rotates_neighbouring_pairs_as_complex_numbers():
    x = _randn(1, 1, 5, 8)
    ours = RotaryEmbedding(8, 100.0, "interleaved")(x, start=3)
    pairs = torch.view_as_complex(x.reshape(1, 1, 5, 4, 2).contiguous())  # (x_2i + i x_2i+1)
    freqs = 1.0 / 100.0 ** (torch.arange(0, 8, 2).double() / 8)  # (4,)
    angles = torch.arange(3, 8).double()[:, None] * freqs  # positions 3..7
    turned = torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles).cfloat()).reshape(1, 1, 5, 8)
    assert torch.allclose(ours, turned, atol=1e-5)


@pytest.mark.parametrize("style", ["halves", "interleaved"])
def test_rotary_scores_depend_on_the_distance_only(style):
    rope = RotaryEmbedding(16, 10000.0, style)
    q, k = _randn(1, 1, 1, 16), _randn(1, 1, 1, 16)

    def score(i: int, j: int) -> float:
        return float((rope(q, i) * rope(k, j)).sum())

    assert score(5, 3) == pytest.approx(score(42, 40), abs=1e-4)
    assert score(5, 3) == pytest.approx(score(102, 100), abs=1e-4)
    assert score(5, 3) != pytest.approx(score(6, 3), abs=1e-3)
    assert score(0, 0) == pytest.approx(float((q * k).sum()), abs=1e-5)  # position 0 is not rotated


def test_kv_head_of_groups_consecutive_query_heads():
    assert kv_head_of(4, 2) == (0, 0, 1, 1)
    assert kv_head_of(6, 1) == (0,) * 6  # multi-query
    assert kv_head_of(3) == (0, 1, 2)
    with pytest.raises(ValueError, match="multiple"):
        kv_head_of(4, 3)


def test_grouped_query_attention_equals_full_heads_with_shared_keys_and_values():
    grouped = MultiHeadAttention(16, 4, num_kv_heads=2)
    full = MultiHeadAttention(16, 4)
    state = grouped.state_dict()
    for name in ("w_k", "w_v"):  # each of the 2 key/value heads (4 columns) copied to its 2 query heads
        w, b = state[f"{name}.weight"].view(2, 4, 16), state[f"{name}.bias"].view(2, 4)
        state[f"{name}.weight"] = w.repeat_interleave(2, 0).reshape(16, 16)
        state[f"{name}.bias"] = b.repeat_interleave(2, 0).reshape(16)
    full.load_state_dict(state)
    x = _randn(2, 6, 16)
    out_g, rec_g = grouped(x, x, x, need_weights=True)
    out_f, rec_f = full(x, x, x, need_weights=True)
    assert grouped.w_k.weight.shape == (8, 16) and rec_g.weights.shape == (2, 4, 6, 6)
    assert torch.allclose(out_g, out_f, atol=1e-6) and torch.allclose(rec_g.weights, rec_f.weights, atol=1e-6)
    assert torch.equal(rec_g.keys[:, 0], rec_g.keys[:, 1]) and not torch.equal(rec_g.keys[:, 1], rec_g.keys[:, 2])


def _modern(**changes) -> ModelConfig:
    base = dict(
        d_model=32, num_heads=4, num_kv_heads=2, num_layers=2, d_ff=40, max_len=64, positional="rotary",
        norm_style="rms", gated_ffn=True, activation="silu", qkv_bias=False, out_bias=False, ffn_bias=False,
    )  # fmt: skip
    base.update(changes)
    return lm_config(base.pop("vocab_size", 60), **base)


CACHED_CASES = {
    "llama": {},
    "interleaved partial": {"rotary_style": "interleaved", "rotary_fraction": 0.5, "pe_base": 100.0},
    "multi-query, q/k/v biases": {"num_kv_heads": 1, "qkv_bias": True},
    "rotary with layer norm and mlp": {"norm_style": "torch", "gated_ffn": False, "activation": "gelu"},
}


@pytest.mark.parametrize("changes", CACHED_CASES.values(), ids=CACHED_CASES.keys())
def test_cached_decoding_equals_the_full_pass(changes):
    torch.manual_seed(1)
    model = DecoderLM(_modern(**changes)).eval()
    init_weights(model, 0.2)
    ids = torch.randint(3, 60, (2, 30), generator=GEN)
    with torch.no_grad():
        full = model(ids, need_weights=True)
    out = forward_cached(model, ids[:, :11], need_weights=True)
    logits, weights = [out.logits], [out.attention]
    for t in range(11, 30):
        out = forward_cached(model, ids[:, t : t + 1], out.cache, need_weights=True)
        logits.append(out.logits)
        weights.append(out.attention)
    assert torch.allclose(torch.cat(logits, 1), full.logits, atol=1e-5)
    for layer in range(2):
        last = weights[-1][layer][:, :, 0]  # (B, H, 30): the last token's row
        assert torch.allclose(last, full.attention[layer].weights[:, :, -1], atol=1e-5)
    assert out.cache.layers[0].self_attn.keys.shape[1] == model.config.kv_heads  # the cache keeps H_kv heads


def test_rotary_model_adds_no_position_table_and_position_zero_is_the_token_alone():
    model = DecoderLM(_modern())
    emb = model.embedding
    assert emb.positions is None
    ids = torch.tensor([[5, 6, 7]])
    x, out = emb(ids)
    assert torch.equal(x, emb.tokens(ids)) and torch.equal(out.positions, torch.zeros(3, 32))


def test_old_configs_load_with_the_old_layers_and_parameter_names(tmp_path):
    old = ModelConfig(d_model=16, num_heads=2, d_ff=24, qkv_bias=False)
    data = old.to_dict()
    for key in ("rotary_style", "rotary_fraction", "num_kv_heads", "gated_ffn", "out_bias", "ffn_bias"):
        data.pop(key)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    loaded = ModelConfig.load(path)
    assert loaded == old and loaded.kv_heads == 2
    names = sorted(build_model(loaded).state_dict())
    layer = [n.removeprefix("encoder.layers.0.") for n in names if "layers.0." in n]
    assert "ffn.linear1.bias" in layer and not any("gate" in n for n in layer)
    assert not any(n.startswith("self_attn.w_o.bias") for n in layer)  # qkv_bias False kept w_o without one, too
    assert build_model(loaded).encoder.layers[0].self_attn.w_k.weight.shape == (16, 16)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_kv_heads": 3}, "multiple of num_kv_heads"),
        ({"rotary_fraction": 0.1}, "even number"),
        ({"rotary_fraction": 1.5}, "rotary_fraction"),
        ({"rotary_style": "spiral"}, "rotary_style"),
        ({"norm_style": "batch"}, "norm_style"),
    ],
)
def test_bad_layer_options_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        _modern(**changes)


def test_parameter_estimate_counts_shared_key_value_heads_and_the_gate():
    config = _modern(num_layers=1, vocab_size=10)
    d, f, kv = 32, 40, 2 * 8
    assert config.estimated_parameters() == 2 * d * d + 2 * d * kv + 3 * d * f + 10 * d
    assert math.isclose(config.head_dim, 8)
