"""Multi-head attention: the Q, K, V and output projections around the per-head engine of
``attention.py``, with grouped-query attention (key/value heads shared by groups of query heads),
rotary positions, and the key/value cache of incremental decoding.

Shapes: B batch, H query heads, H_kv key/value heads, T_q queries, T_k keys, d_k per-head size, D model size.
Masks are True where a query may attend (see ``masks.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import HeadWeights, attention_weights, fast_attention, share_kv_heads


@dataclass
class KeyValueCache:
    """The keys and values one attention module has computed so far in an incremental decoding.

    Kept by the caller, never on the module (one model serves many sessions at once). A
    self-attention cache grows by each call's new positions; a ``fixed`` one (cross-attention
    over an encoder output that does not change) is filled by its first call and then only read,
    so those keys and values are projected once per decoding, not once per step.
    ``keys``/``values``: (B, H, capacity, d_k) storage, the first ``length`` positions in use and the
    rest zeros (the capacity doubles as it fills, so appending costs no copy of the past on most steps).
    """

    fixed: bool = False
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    length: int = 0

    def current(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(keys, values), each (B, H, length, d_k): views of the storage."""
        return self.keys[:, :, : self.length], self.values[:, :, : self.length]

    def append(self, k: torch.Tensor, v: torch.Tensor, capacity: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Add k, v (B, H, T_new, d_k) after the cached positions; returns :meth:`current`.
        capacity: the storage holds at least this many positions afterwards (e.g. for a padded batch)."""
        end = self.length + k.shape[2]
        if self.keys is None or max(end, capacity) > self.keys.shape[2]:
            capacity = max(end, capacity, 2 * (0 if self.keys is None else self.keys.shape[2]), 16)
            self.keys, self.values = (
                self._grown(old, new, capacity) for old, new in ((self.keys, k), (self.values, v))
            )
        self.keys[:, :, self.length : end] = k
        self.values[:, :, self.length : end] = v
        self.length = end
        return self.current()

    def _grown(self, old: torch.Tensor | None, like: torch.Tensor, capacity: int) -> torch.Tensor:
        b, h, _, d = like.shape
        storage = like.new_zeros(b, h, capacity, d)
        if old is not None:
            storage[:, :, : self.length] = old[:, :, : self.length]
        return storage


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate Q, K, V projections ``w_q``, ``w_k``, ``w_v`` and output ``w_o``.

    num_kv_heads: key/value heads (grouped-query attention; 0 = one per query head): ``w_k``/``w_v``
    give num_kv_heads × d_k columns and query head h reads key/value head ``kv_head_of(H, H_kv)[h]``;
    every query head still has its own weights (B, H, T_q, T_k). rotary: a ``RotaryEmbedding`` that
    rotates queries and keys by their absolute position (a cache's past length is the first position).
    out_bias: a bias on ``w_o`` (None: as ``bias``). head_dim: each head's width (0: d_model / num_heads;
    Gemma 3's heads are wider: ``w_q`` then gives num_heads × head_dim columns and ``w_o`` reads them).
    q_norm, k_norm: norms over each head's queries and keys (head_dim wide), applied before rotary (Gemma 3)."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        fill: float = -1e9,
        num_kv_heads: int = 0,
        out_bias: bool | None = None,
        rotary: nn.Module | None = None,
        head_dim: int = 0,
        q_norm: nn.Module | None = None,
        k_norm: nn.Module | None = None,
    ):
        super().__init__()
        if not head_dim and d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads}).")
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads or num_heads
        if num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads}).")
        self.head_dim = head_dim or d_model // num_heads
        self.fill = fill
        kv_width = self.num_kv_heads * self.head_dim
        self.w_q = nn.Linear(d_model, num_heads * self.head_dim, bias=bias)
        self.w_k = nn.Linear(d_model, kv_width, bias=bias)
        self.w_v = nn.Linear(d_model, kv_width, bias=bias)
        self.w_o = nn.Linear(num_heads * self.head_dim, d_model, bias=bias if out_bias is None else out_bias)
        self.dropout = nn.Dropout(dropout)
        self.rotary = rotary
        self.q_norm = q_norm
        self.k_norm = k_norm

    def split_heads(self, x: torch.Tensor, heads: int | None = None) -> torch.Tensor:
        """(B, T, heads · d_k) -> (B, heads, T, d_k); heads defaults to the query heads."""
        b, t, _ = x.shape
        return x.view(b, t, heads or self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d_k)

    def shared(self, kv: torch.Tensor) -> torch.Tensor:
        """(B, H_kv, T, d_k) -> (B, H, T, d_k): each key/value head repeated for the query heads of its group."""
        return kv if self.num_kv_heads == self.num_heads else share_kv_heads(kv, self.num_heads)

    def keys_values(
        self, key: torch.Tensor, value: torch.Tensor, cache: KeyValueCache | None, share: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(k, v) (B, H, T_k, d_k): projected now, or read from / appended to ``cache`` (which keeps
        the H_kv key/value heads, keys already rotated); ``share=False`` leaves them (B, H_kv, T_k, d_k)."""
        if cache is not None and cache.fixed and cache.length:
            k, v = cache.current()
        else:
            k = self.split_heads(_linear(self.w_k, key), self.num_kv_heads)
            v = self.split_heads(_linear(self.w_v, value), self.num_kv_heads)
            if self.k_norm is not None:
                k = self.k_norm(k)
            if self.rotary is not None:
                k = self.rotary(k, 0 if cache is None else cache.length)
            k, v = (k, v) if cache is None else cache.append(k, v)
        return (self.shared(k), self.shared(v)) if share else (k, v)

    def projections(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        cache: KeyValueCache | None = None,
        share: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(q (B, H, T_q, d_k), k, v (B, H, T_k, d_k)): what the heads compare and mix, rotated where the
        module has rotary (queries at the cache's past length onwards), key/value heads shared by their
        group (``share=False``: k and v keep their H_kv heads, for a kernel that reads the groups itself)."""
        q = self.split_heads(_linear(self.w_q, query))
        if self.q_norm is not None:
            q = self.q_norm(q)
        if self.rotary is not None:
            q = self.rotary(q, 0 if cache is None else cache.length)  # before the new keys join the cache
        k, v = self.keys_values(key, value, cache, share)
        return q, k, v

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
        weights_out: torch.Tensor | None = None,
        cache: KeyValueCache | None = None,
    ) -> tuple[torch.Tensor, HeadWeights | None]:
        """query (B, T_q, D), key/value (B, T_k, D), mask (B, 1, T_q, T_k) or (T_q, T_k).

        head_mask (H,): a gate per head (1 on, 0 off) applied to each head's output before
        ``w_o``; when every head is off, the sublayer's output is exactly zero (bias too).
        A (B, H) head_mask gives each input its own gates (e.g. many switch-off variants in one batch).
        weights_out: a float32 (B, H, T_q, T_k) tensor to write the weights into (implies
        ``need_weights``). cache: keys and values of earlier calls (see :class:`KeyValueCache`);
        the mask then spans every cached key, (B, 1, T_q, T_past + T_k).
        Returns (output (B, T_q, D), HeadWeights or None).
        """
        record = None
        if need_weights or weights_out is not None:
            q, k, v = self.projections(query, key, value, cache)
            context, weights = attention_weights(q, k, v, mask, self.fill, self.dropout, weights_out)
            record = HeadWeights(weights, q, k)
        else:  # grouped key/value heads go to the kernel as they are: no copy of the cache per query head
            q, k, v = self.projections(query, key, value, cache, share=False)
            context = fast_attention(q, k, v, mask, self.fill, self.dropout.p if self.training else 0.0)
        if head_mask is not None:
            context = context * head_mask.to(context.dtype).reshape(-1, self.num_heads, 1, 1)  # (1 or B, H, 1, 1)
        b, _, t_q, _ = context.shape
        merged = context.transpose(1, 2).reshape(b, t_q, -1)  # (B, T_q, D)
        out = _linear(self.w_o, merged)
        if head_mask is not None and not bool(head_mask.any()):
            out = torch.zeros_like(out)
        elif head_mask is not None and head_mask.dim() == 2:
            all_off = ~head_mask.bool().any(dim=-1)  # (B,): inputs whose heads are all off
            out = out.masked_fill(all_off.view(-1, 1, 1), 0.0)
        return out, record


def kv_head_of(num_heads: int, num_kv_heads: int = 0) -> tuple[int, ...]:
    """For each query head, the key/value head it shares (grouped-query attention): consecutive
    query heads form a group, e.g. 4 heads over 2 key/value heads -> (0, 0, 1, 1)."""
    kv = num_kv_heads or num_heads
    if kv <= 0 or num_heads % kv:
        raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({kv}).")
    return tuple(h // (num_heads // kv) for h in range(num_heads))


def _linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)`` without the module-call machinery (hooks are not used here): at 128 tokens the
    four projections' calls were a measurable part of a layer's time."""
    return F.linear(x, layer.weight, layer.bias)
