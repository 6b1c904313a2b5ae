"""Attention against PyTorch's reference implementation, and its properties."""

import pytest
import torch
from torch import nn

from transformer.core.attention import attention_steps, scaled_dot_product_attention
from transformer.core.masks import key_padding_from, padding_mask
from transformer.core.multihead import MultiHeadAttention

D, H = 16, 4


def copy_from_torch(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    wq, wk, wv = ref.in_proj_weight.detach().chunk(3)
    bq, bk, bv = ref.in_proj_bias.detach().chunk(3)
    with torch.no_grad():
        for lin, w, b in ((ours.w_q, wq, bq), (ours.w_k, wk, bk), (ours.w_v, wv, bv)):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
        ours.w_o.weight.copy_(ref.out_proj.weight)
        ours.w_o.bias.copy_(ref.out_proj.bias)


@pytest.fixture
def pair():
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    ours = MultiHeadAttention(D, H).eval()
    copy_from_torch(ours, ref)
    return ours, ref


def test_per_head_weights_and_output_match_torch(pair):
    ours, ref = pair
    x = torch.randn(3, 7, D)
    ids = torch.tensor([[5] * 7, [5] * 4 + [1] * 3, [5] * 2 + [1] * 5])
    mask = padding_mask(ids, pad_id=1)
    out, record = ours(x, x, x, mask, need_weights=True)
    ref_out, ref_w = ref(
        x, x, x, key_padding_mask=key_padding_from(mask), need_weights=True, average_attn_weights=False
    )
    assert record.weights.shape == (3, H, 7, 7)
    assert (record.weights - ref_w).abs().max() <= 1e-5
    assert (out - ref_out).abs().max() <= 1e-5


def test_cross_attention_shapes_match_torch(pair):
    ours, ref = pair
    q, kv = torch.randn(2, 3, D), torch.randn(2, 9, D)
    out, record = ours(q, kv, kv, None, need_weights=True)
    ref_out, ref_w = ref(q, kv, kv, need_weights=True, average_attn_weights=False)
    assert record.weights.shape == (2, H, 3, 9)
    assert (record.weights - ref_w).abs().max() <= 1e-5
    assert (out - ref_out).abs().max() <= 1e-5


def test_fast_path_equals_explicit_path(pair):
    ours, _ = pair
    x = torch.randn(2, 6, D)
    mask = padding_mask(torch.tensor([[4] * 6, [4] * 3 + [1] * 3]), pad_id=1)
    fast, none = ours(x, x, x, mask, need_weights=False)
    slow, _ = ours(x, x, x, mask, need_weights=True)
    assert none is None
    assert (fast - slow).abs().max() <= 1e-5


def test_rows_sum_to_one_and_masked_cells_are_exactly_zero():
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, 5, dtype=torch.bool)
    mask[:, :, 3:] = False
    _, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.allclose(w.sum(-1), torch.ones(2, 5), atol=1e-6)
    assert (w[:, :, 3:] == 0).all()


def test_all_masked_row_gives_zeros_not_nan():
    q = k = v = torch.randn(1, 3, 4)
    mask = torch.ones(1, 3, 3, dtype=torch.bool)
    mask[0, 1] = False
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any() and not torch.isnan(w).any()
    assert (w[0, 1] == 0).all() and (out[0, 1] == 0).all()
    mha = MultiHeadAttention(4, 2).eval()
    fast, _ = mha(q, q, q, mask[:, None])
    assert not torch.isnan(fast).any()


def test_steps_expose_scores_before_and_after_masking():
    q, k, v = torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    mask = torch.tensor([[[True, True, False], [True, False, False]]])
    steps = attention_steps(q, k, v, mask, fill=-1e9)
    assert torch.allclose(steps.scores, q @ k.transpose(-2, -1) / 2.0)
    assert steps.masked_scores[0, 0, 2] == -1e9 and steps.masked_scores[0, 0, 1] == steps.scores[0, 0, 1]
    assert torch.allclose(steps.weights[0, 1], torch.tensor([1.0, 0.0, 0.0]))


def test_fill_minus_1e10_gives_the_same_weights_as_minus_1e9():
    q, k, v = torch.randn(1, 4, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 8)
    mask = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    assert torch.equal(attention_steps(q, k, v, mask, -1e9).weights, attention_steps(q, k, v, mask, -1e10).weights)


def test_head_mask_switches_heads_off(pair):
    ours, _ = pair
    x = torch.randn(1, 5, D)
    off, _ = ours(x, x, x, None, head_mask=torch.zeros(H))
    assert torch.equal(off, torch.zeros_like(off))
    one_off, _ = ours(x, x, x, None, head_mask=torch.tensor([1.0, 0.0, 1.0, 1.0]))
    full, _ = ours(x, x, x, None, need_weights=True)
    assert not torch.allclose(one_off, full)
