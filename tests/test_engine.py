"""The weights path and the key/value cache give the reference numbers: attention written in place
into a shared buffer equals attention_steps, the analysis returns that buffer without copies and
computes the pre-mask scores only when read, and cached layers equal full passes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from transformer import analyze, load_bundle
from transformer.core.attention import attention_steps, attention_weights, compact_mask, fast_attention, weights_buffer
from transformer.core.config import ModelConfig
from transformer.core.layers import EncoderLayer, LayerCache
from transformer.core.masks import look_ahead_mask, padding_mask
from transformer.core.model import SequenceClassifier
from transformer.core.multihead import KeyValueCache, MultiHeadAttention


def random_qkv(b=3, h=2, t_q=5, t_k=5, d=4, seed=0):
    torch.manual_seed(seed)
    return torch.randn(b, h, t_q, d), torch.randn(b, h, t_k, d), torch.randn(b, h, t_k, d)


@pytest.mark.parametrize(
    "masked", ["none", "padding", "left padding", "an input all padding", "look-ahead", "row blocked"]
)
def test_in_place_weights_equal_the_steps(masked):
    q, k, v = random_qkv()
    ids = torch.tensor([[5] * 5, [5] * 3 + [1] * 2, [5] + [1] * 4])
    mask = {
        "none": None,
        "padding": padding_mask(ids, 1),  # an expanded view of (B, T): each input's first keys open
        "left padding": padding_mask(ids.flip(-1), 1),  # open keys last: the general path
        "an input all padding": padding_mask(torch.tensor([[5] * 5, [1] * 5, [5, 5, 1, 1, 1]]), 1),
        "look-ahead": look_ahead_mask(5),
        "row blocked": torch.ones(3, 1, 5, 5, dtype=torch.bool).index_fill_(2, torch.tensor([2]), False),
    }[masked]
    ref = attention_steps(q, k, v, mask, -1e9)
    out, weights = attention_weights(q, k, v, mask, -1e9)
    torch.testing.assert_close(weights, ref.weights, atol=1e-6, rtol=0)
    torch.testing.assert_close(out, ref.output, atol=1e-6, rtol=0)
    if mask is not None:
        assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()  # blocked cells exactly 0


def test_weights_go_into_a_layer_slice_of_a_shared_buffer():
    q, k, v = random_qkv()
    mask = padding_mask(torch.tensor([[5] * 5, [5] * 3 + [1] * 2, [5] * 4 + [1]]), 1)
    buffer = torch.full((3, 2, 2, 5, 5), 7.0)  # (B, L, H, T, T): layer 1's slice is not contiguous
    out, weights = attention_weights(q, k, v, mask, -1e9, out=buffer[:, 1])
    ref = attention_steps(q, k, v, mask, -1e9)
    assert weights.data_ptr() == buffer[:, 1].data_ptr()
    torch.testing.assert_close(buffer[:, 1], ref.weights, atol=1e-6, rtol=0)
    torch.testing.assert_close(out, ref.output, atol=1e-6, rtol=0)
    assert (buffer[:, 0] == 7.0).all()  # the other layer's slice untouched


def test_with_gradients_and_in_double_precision_the_functional_path_gives_the_same():
    q, k, v = random_qkv()
    q.requires_grad_(True)
    mask = look_ahead_mask(5)
    out, weights = attention_weights(q, k, v, mask, -1e9)
    out.sum().backward()  # autograd works through the weights path
    assert q.grad is not None and torch.isfinite(q.grad).all()
    ref = attention_steps(q.detach(), k, v, mask, -1e9)
    torch.testing.assert_close(weights.detach(), ref.weights, atol=1e-6, rtol=0)
    q64, k64, v64 = (t.detach().double() for t in (q, k, v))
    out64, weights64 = attention_weights(q64, k64, v64, mask, -1e9)
    assert weights64.dtype == torch.float64
    torch.testing.assert_close(weights64.float(), ref.weights, atol=1e-6, rtol=0)


def test_compact_mask_drops_broadcast_copies_only():
    mask = padding_mask(torch.tensor([[5, 5, 1], [5, 1, 1]]), 1)  # (2, 1, 3, 3) from (2, 3)
    small = compact_mask(mask)
    assert small.shape == (2, 1, 1, 3)
    assert torch.equal(small.expand_as(mask), mask)
    full = torch.rand(2, 3, 3) > 0.5
    assert compact_mask(full).shape == full.shape


def test_fast_attention_keeps_nan_keys_as_nan():
    q, k, v = random_qkv(b=1)
    k[0, 0, :, 0] = float("nan")  # every key of head 0: PyTorch's unmasked CPU kernel would give 0
    out = fast_attention(q, k, v, None, -1e9, 0.0)
    assert torch.isnan(out[0, 0]).all() and torch.isfinite(out[0, 1]).all()


def test_a_large_buffer_is_an_ordinary_float32_tensor():
    buffer = weights_buffer(1, 2, 4, 1024, 1024)  # 32 MB: asks for huge pages on Linux
    assert buffer.dtype == torch.float32 and buffer.shape == (1, 2, 4, 1024, 1024) and buffer.is_contiguous()
    buffer.fill_(0.5)
    assert float(buffer.sum()) == 0.5 * buffer.numel()


def test_analysis_weights_are_the_forwards_and_scores_are_computed_when_read(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    texts = ["the movie was great", "bad plot"]
    result = analyze(loaded, texts)
    ids = torch.as_tensor(result.ids)
    with torch.no_grad():
        out = loaded.model(ids, need_weights=True)
    for layer, record in enumerate(out.encoder.attention):
        np.testing.assert_allclose(result.attention[:, layer], record.weights.numpy(), atol=1e-6)
        np.testing.assert_allclose(result.scores[:, layer], record.scores.numpy(), atol=1e-5)
        np.testing.assert_allclose(result.queries[:, layer], record.queries.numpy(), atol=1e-6)
    n = int(result.lengths[1])
    np.testing.assert_allclose(result.scores_for(1), result.scores[1, :, :, :n, :n], atol=1e-6)
    assert result.attention.flags.c_contiguous
    assert "scores" not in type(result).__dataclass_fields__  # computed when read, not stored


def test_scores_are_q_k_over_root_dk():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 4, 8)
    with torch.no_grad():
        _, record = mha(x, x, x, None, need_weights=True)
        steps = attention_steps(record.queries, record.keys, record.keys, None)
    torch.testing.assert_close(record.scores, steps.scores)
    assert record.scores.shape == (1, 2, 4, 4)
    assert math.isclose(
        float(record.scores[0, 0, 0, 1]), float(record.queries[0, 0, 0] @ record.keys[0, 0, 1]) / 2, rel_tol=1e-6
    )


def test_key_value_cache_grows_and_keeps_what_it_held():
    cache = KeyValueCache()
    chunks = [torch.randn(2, 3, n, 4) for n in (1, 15, 1, 20)]
    for i, chunk in enumerate(chunks):
        keys, values = cache.append(chunk, -chunk)
        seen = torch.cat(chunks[: i + 1], dim=2)
        assert torch.equal(keys, seen) and torch.equal(values, -seen)
    assert cache.length == 37 and cache.keys.shape[2] >= 37


@pytest.mark.parametrize("norm_first", [False, True])
def test_a_cached_causal_layer_equals_the_full_pass(norm_first):
    """The decoder-only use: EncoderLayer with the look-ahead mask, one or a few new tokens at a time."""
    torch.manual_seed(0)
    cfg = ModelConfig(d_model=16, num_heads=4, d_ff=32, num_layers=2, norm_first=norm_first, dropout=0.0)
    layers = [EncoderLayer(cfg).eval() for _ in range(2)]
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        full, full_weights = x, []
        for layer in layers:
            full, w = layer(full, look_ahead_mask(9), True)
            full_weights.append(w.weights)
        caches = [LayerCache() for _ in layers]
        for start, stop in ((0, 4), (4, 5), (5, 9)):
            h = x[:, start:stop]
            mask = look_ahead_mask(stop - start, past=start)
            for i, (layer, cache) in enumerate(zip(layers, caches)):
                h, w = layer(h, mask, True, cache=cache)
                torch.testing.assert_close(w.weights, full_weights[i][:, :, start:stop, :stop], atol=1e-5, rtol=0)
            torch.testing.assert_close(h, full[:, start:stop], atol=1e-5, rtol=0)
        assert caches[0].length == 9


def test_classifier_weights_out_matches_plain_forward():
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=30, d_model=16, num_heads=4, d_ff=32, num_layers=3, pad_id=1, dropout=0.0)
    model = SequenceClassifier(cfg).eval()
    ids = torch.tensor([[4, 5, 6, 7, 8], [4, 5, 1, 1, 1]])
    buffer = torch.empty(2, 3, 4, 5, 5)
    with torch.no_grad():
        plain = model(ids, need_weights=True)
        into = model(ids, need_weights=True, weights_out=buffer)
    torch.testing.assert_close(into.logits, plain.logits, atol=1e-6, rtol=0)
    for i, record in enumerate(plain.encoder.attention):
        torch.testing.assert_close(buffer[:, i], record.weights, atol=1e-6, rtol=0)


def test_half_precision_weights_are_the_rounded_ones_the_product_used():
    """The path autocast takes on a GPU (bfloat16 queries and keys), checked on the CPU: the float32
    buffer holds exactly the bfloat16 weights that multiplied V, as attention_steps gives them."""
    q, k, v = (t.to(torch.bfloat16) for t in random_qkv())
    mask = padding_mask(torch.tensor([[5] * 5, [5] * 3 + [1] * 2, [5] * 4 + [1]]), 1)
    buffer = torch.empty(3, 2, 2, 5, 5)
    out, weights = attention_weights(q, k, v, mask, -1e9, out=buffer[:, 1])
    ref = attention_steps(q, k, v, mask, -1e9)
    assert weights.dtype == torch.float32 and out.dtype == torch.bfloat16
    assert torch.equal(buffer[:, 1], ref.weights.float())
    assert torch.equal(out, ref.output)
