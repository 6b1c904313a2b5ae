"""Encoder and decoder layers against nn.TransformerEncoderLayer / nn.TransformerDecoderLayer."""

import pytest
import torch
from torch import nn

from transformer.core.config import ModelConfig
from transformer.core.layers import DecoderLayer, EncoderLayer, StdEpsLayerNorm
from transformer.core.masks import decoder_self_mask, key_padding_from, look_ahead_mask, padding_mask, to_torch_blocked

from .test_attention import copy_from_torch

D, H, FF = 16, 4, 32


def copy_norm(ours, ref):
    with torch.no_grad():
        ours.weight.copy_(ref.weight)
        ours.bias.copy_(ref.bias)


def copy_ffn(ours, ref):
    ours.ffn.linear1.load_state_dict(ref.linear1.state_dict())
    ours.ffn.linear2.load_state_dict(ref.linear2.state_dict())


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, activation):
    torch.manual_seed(0)
    cfg = ModelConfig(d_model=D, num_heads=H, d_ff=FF, norm_first=norm_first, activation=activation)
    ref = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.1, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    ours = EncoderLayer(cfg).eval()
    copy_from_torch(ours.self_attn, ref.self_attn)
    copy_ffn(ours, ref)
    copy_norm(ours.attn_block.norm, ref.norm1)
    copy_norm(ours.ffn_block.norm, ref.norm2)
    ids = torch.tensor([[3] * 6, [3] * 4 + [1] * 2])
    mask = padding_mask(ids, 1)
    x = torch.randn(2, 6, D)
    out, weights = ours(x, mask, need_weights=True)
    expected = ref(x, src_key_padding_mask=key_padding_from(mask))
    keep = ids != 1  # torch's fast path may leave pad rows undefined; compare real tokens
    assert (out[keep] - expected[keep]).abs().max() <= 1e-5
    assert weights.weights.shape == (2, H, 6, 6)


def test_decoder_layer_matches_torch():
    torch.manual_seed(0)
    cfg = ModelConfig(d_model=D, num_heads=H, d_ff=FF)
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.1, batch_first=True).eval()
    ours = DecoderLayer(cfg).eval()
    copy_from_torch(ours.self_attn, ref.self_attn)
    copy_from_torch(ours.cross_attn, ref.multihead_attn)
    copy_ffn(ours, ref)
    copy_norm(ours.self_block.norm, ref.norm1)
    copy_norm(ours.cross_block.norm, ref.norm2)
    copy_norm(ours.ffn_block.norm, ref.norm3)
    tgt_ids = torch.tensor([[4] * 5, [4] * 3 + [1] * 2])
    src_ids = torch.tensor([[4] * 7, [4] * 6 + [1]])
    y, memory = torch.randn(2, 5, D), torch.randn(2, 7, D)
    self_mask = decoder_self_mask(tgt_ids, 1)
    cross_mask = padding_mask(src_ids, 1, query_length=5)
    out, self_w, cross_w = ours(y, memory, self_mask, cross_mask, need_weights=True)
    expected = ref(
        y,
        memory,
        tgt_mask=to_torch_blocked(look_ahead_mask(5)),
        tgt_key_padding_mask=tgt_ids == 1,
        memory_key_padding_mask=src_ids == 1,
    )
    keep = tgt_ids != 1
    assert (out[keep] - expected[keep]).abs().max() <= 1e-5
    assert self_w.weights.shape == (2, H, 5, 5) and cross_w.weights.shape == (2, H, 5, 7)
    assert (torch.triu(self_w.weights, diagonal=1) == 0).all()


def test_std_eps_layer_norm_divides_by_std_plus_eps():
    x = torch.randn(3, 8)
    norm = StdEpsLayerNorm(8, eps=1e-12)
    expected = (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-12)
    assert torch.allclose(norm(x), expected, atol=1e-6)
