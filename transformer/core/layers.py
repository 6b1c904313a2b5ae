"""Encoder and decoder layers: attention, feed-forward, residual connections and LayerNorm."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .attention import HeadWeights
from .config import ModelConfig
from .multihead import KeyValueCache, MultiHeadAttention
from .positional import RotaryEmbedding


@dataclass
class LayerCache:
    """What one layer keeps between the steps of an incremental decoding (kept by the caller).

    self_attn: the keys and values of every position seen so far, appended by each call;
    cross_attn: the keys and values of the encoder output, projected on the first call and then
    reused (only layers with cross-attention use it). With a cache, a layer is given only the
    new positions (B, T_new, D) and a self-attention mask over every key, (T_new, T_past + T_new)
    or (B, 1, T_new, T_past + T_new); its output and weights are the rows of the new positions,
    the same numbers a full pass over the whole prefix gives them (within float rounding).

    A decoder-only model runs its layers one new token at a time like this::

        caches = [LayerCache() for _ in model.layers]
        for step in range(n):
            past = caches[0].length
            x, _ = model.embedding(new_ids, offset=past)  # new_ids (B, T_new): positions past ..
            mask = look_ahead_mask(new_ids.shape[1], x.device, past=past)  # (T_new, past + T_new)
            for layer, cache in zip(model.layers, caches):
                x, weights = layer(x, mask, need_weights, cache=cache)
    """

    self_attn: KeyValueCache = field(default_factory=KeyValueCache)
    cross_attn: KeyValueCache = field(default_factory=lambda: KeyValueCache(fixed=True))

    @property
    def length(self) -> int:
        """Positions seen so far."""
        return self.self_attn.length


class StdEpsLayerNorm(nn.Module):
    """LayerNorm that divides by (unbiased std + eps), as some tutorial code writes it."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.weight * (x - mean) / (std + self.eps) + self.bias


class RMSNorm(nn.Module):
    """weight · x / sqrt(mean(x²) + eps) over the last dimension, no mean removed, no bias (Llama's
    RMSNorm: the statistics in float32, the weight applied in the input's dtype). (..., D) -> (..., D)."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)


def make_norm(config: ModelConfig, width: int = 0) -> nn.Module:
    """The config's norm over ``width`` values (0: d_model)."""
    width = width or config.d_model
    if config.norm_style == "std_eps":
        return StdEpsLayerNorm(width, config.layer_norm_eps)
    if config.norm_style == "rms":
        return RMSNorm(width, config.layer_norm_eps)
    return nn.LayerNorm(width, eps=config.layer_norm_eps)


def make_self_attention(config: ModelConfig, layer: int = 0) -> MultiHeadAttention:
    """The self-attention of layer ``layer`` as the config chooses it (heads and their width, key/value heads,
    biases, norms on queries and keys, rotary with the base of a local or a global layer)."""
    rotary = None
    if config.positional == "rotary":
        local = config.local_pe_base and layer in config.local_layers
        base = config.local_pe_base if local else config.pe_base
        rotary = RotaryEmbedding(config.rotary_dim, base, config.rotary_style)
    q_norm, k_norm = (make_norm(config, config.head_dim) for _ in range(2)) if config.qk_norm else (None, None)
    return MultiHeadAttention(
        config.d_model,
        config.num_heads,
        config.attention_dropout,
        config.qkv_bias,
        config.mask_fill,
        num_kv_heads=config.num_kv_heads,
        out_bias=config.qkv_bias and config.out_bias,
        rotary=rotary,
        head_dim=config.attention_head_dim,
        q_norm=q_norm,
        k_norm=k_norm,
    )


def make_feed_forward(config: ModelConfig) -> FeedForward:
    return FeedForward(
        config.d_model, config.d_ff, config.dropout, config.activation, gated=config.gated_ffn, bias=config.ffn_bias
    )


class FeedForward(nn.Module):
    """Position-wise linear2(dropout(act(linear1(x)))): (B, T, D) -> (B, T, D).

    gated: linear2(act(gate(x)) * linear1(x)), the gated linear unit (SwiGLU with activation "silu");
    ``linear1`` is then the "up" projection, ``gate`` the gate and ``linear2`` the "down" one."""

    def __init__(
        self, d_model: int, d_ff: int, dropout: float, activation: str, gated: bool = False, bias: bool = True
    ) -> None:
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=bias) if gated else None
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.activation = {"gelu": F.gelu, "silu": F.silu}.get(activation, F.relu)
        if activation == "gelu_tanh":  # GPT-2's "gelu_new": the tanh approximation of GELU
            self.activation = _gelu_tanh

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate is None:
            hidden = self.activation(self.linear1(x))
        else:
            hidden = self.activation(self.gate(x)) * self.linear1(x)
        return self.linear2(self.dropout(hidden) if self.training else hidden)


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


class Sublayer(nn.Module):
    """Residual connection with LayerNorm after (post-norm, the paper) or before (pre-norm); a pre-norm
    sublayer with ``post_norm`` (``config.sublayer_post_norm``, Gemma's) also normalises its output before
    the sum: x + post_norm(fn(norm(x)))."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.norm = make_norm(config)
        self.post_norm = make_norm(config) if config.sublayer_post_norm else None
        self.dropout = nn.Dropout(config.dropout)
        self.norm_first = config.norm_first

    def forward(self, x: torch.Tensor, fn) -> tuple[torch.Tensor, object]:
        """fn maps a (B, T, D) tensor to (output (B, T, D), extra); returns (new x, extra)."""
        if self.norm_first:
            out, extra = fn(self.norm(x))
            if self.post_norm is not None:
                out = self.post_norm(out)
            return x + (self.dropout(out) if self.training else out), extra
        out, extra = fn(x)
        return self.norm(x + (self.dropout(out) if self.training else out)), extra


class EncoderLayer(nn.Module):
    """Self-attention -> add & norm -> feed-forward -> add & norm. ``layer``: its index in the stack (a
    local layer's rotary may have its own base)."""

    def __init__(self, config: ModelConfig, layer: int = 0) -> None:
        super().__init__()
        self.self_attn = make_self_attention(config, layer)
        self.ffn = make_feed_forward(config)
        self.attn_block = Sublayer(config)
        self.ffn_block = Sublayer(config)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
        weights_out: torch.Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> tuple[torch.Tensor, HeadWeights | None]:
        """x (B, T, D), mask (B, 1, T, T) -> (B, T, D) and per-head weights when asked.

        weights_out: float32 (B, H, T, T) to write the weights into; cache: see :class:`LayerCache`."""
        kv = None if cache is None else cache.self_attn
        x, weights = self.attn_block(
            x, lambda h: self.self_attn(h, h, h, mask, need_weights, head_mask, weights_out, kv)
        )
        x, _ = self.ffn_block(x, lambda h: (self.ffn(h), None))
        return x, weights


class DecoderLayer(nn.Module):
    """Look-ahead-masked self-attention, cross-attention to the encoder output, feed-forward."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        args = (config.d_model, config.num_heads, config.attention_dropout, config.qkv_bias, config.mask_fill)
        self.self_attn = make_self_attention(config)
        self.cross_attn = MultiHeadAttention(
            *args, num_kv_heads=config.num_kv_heads, out_bias=config.qkv_bias and config.out_bias
        )
        self.ffn = make_feed_forward(config)
        self.self_block = Sublayer(config)
        self.cross_block = Sublayer(config)
        self.ffn_block = Sublayer(config)

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None,
        cross_mask: torch.Tensor | None,
        need_weights: bool = False,
        weights_out: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: LayerCache | None = None,
        cross_gates: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, HeadWeights | None, HeadWeights | None]:
        """y (B, T_t, D) target states, memory (B, T_s, D); self_mask (B, 1, T_t, T_t),
        cross_mask (B, 1, T_t, T_s). Returns (B, T_t, D), self weights, cross weights.

        weights_out: float32 (B, H, T_t, T_t) and (B, H, T_t, T_s) to write the self- and
        cross-attention weights into; cache: see :class:`LayerCache` (memory is then projected
        on the first call only); cross_gates (H,) or (B, H): cross-attention heads on (1) or off (0)."""
        self_out, cross_out = (None, None) if weights_out is None else weights_out
        self_kv, cross_kv = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
        y, self_w = self.self_block(
            y, lambda h: self.self_attn(h, h, h, self_mask, need_weights, None, self_out, self_kv)
        )
        y, cross_w = self.cross_block(
            y, lambda h: self.cross_attn(h, memory, memory, cross_mask, need_weights, cross_gates, cross_out, cross_kv)
        )
        y, _ = self.ffn_block(y, lambda h: (self.ffn(h), None))
        return y, self_w, cross_w
