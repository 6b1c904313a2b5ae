"""Scaled dot-product attention and multi-head attention that return per-head weights.

Shapes: B batch, H heads, T_q queries, T_k keys, d_k per-head size, D model size.
Masks are True where a query may attend (see ``masks.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class AttentionResult:
    """Every stage of one attention call.

    output: (..., T_q, d_v); weights: (..., T_q, T_k) softmax after masking, exactly 0 where
    blocked; scores: (..., T_q, T_k) QKᵀ/√d_k before masking; masked_scores: scores with
    blocked cells set to the fill value.
    """

    output: torch.Tensor
    weights: torch.Tensor
    scores: torch.Tensor
    masked_scores: torch.Tensor


def attention_steps(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    fill: float = -1e9,
    dropout: nn.Module | None = None,
) -> AttentionResult:
    """softmax(QKᵀ/√d_k, masked) V with every intermediate. q (..., T_q, d_k), k (..., T_k, d_k),
    v (..., T_k, d_v), mask broadcastable to (..., T_q, T_k)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    masked = scores if mask is None else scores.masked_fill(~mask, fill)
    # softmax in float32 so half-precision inference keeps blocked cells at exactly 0
    weights = torch.softmax(masked.float(), dim=-1)
    if mask is not None:
        # a fill of -1e9 already gives 0; this also turns an all-blocked row into zeros, not NaN
        weights = weights.masked_fill(~mask, 0.0)
    weights = weights.to(v.dtype)
    attended = weights if dropout is None else dropout(weights)
    return AttentionResult(attended @ v, weights, scores, masked)


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, fill: float = -1e9
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (..., T_q, d_v), weights (..., T_q, T_k)) as in the paper and the annotated transformer."""
    result = attention_steps(q, k, v, mask, fill)
    return result.output, result.weights


def fast_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, fill: float, dropout_p: float
) -> torch.Tensor:
    """Same output as :func:`attention_steps` through PyTorch's fused kernel; no weights."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    additive = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, fill)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout_p)
    any_open = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1): all-blocked rows give zeros
    return out * any_open


@dataclass(frozen=True)
class HeadWeights:
    """Per-head attention of one layer: weights and pre-mask scores, both (B, H, T_q, T_k)."""

    weights: torch.Tensor
    scores: torch.Tensor


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate Q, K, V projections ``w_q``, ``w_k``, ``w_v`` and output ``w_o``."""

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True, fill: float = -1e9):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads}).")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.fill = fill
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d_k)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, HeadWeights | None]:
        """query (B, T_q, D), key/value (B, T_k, D), mask (B, 1, T_q, T_k) or (T_q, T_k).

        head_mask (H,): a gate per head (1 on, 0 off) applied to each head's output before
        ``w_o``; when every head is off, the sublayer's output is exactly zero (bias too).
        A (B, H) head_mask gives each input its own gates (e.g. many switch-off variants in one batch).
        Returns (output (B, T_q, D), HeadWeights or None).
        """
        q = self.split_heads(self.w_q(query))
        k = self.split_heads(self.w_k(key))
        v = self.split_heads(self.w_v(value))
        if need_weights or head_mask is not None:
            steps = attention_steps(q, k, v, mask, self.fill, self.dropout)
            context, record = steps.output, HeadWeights(steps.weights, steps.scores)
        else:
            p = self.dropout.p if self.training else 0.0
            context, record = fast_attention(q, k, v, mask, self.fill, p), None
        if head_mask is not None:
            context = context * head_mask.to(context.dtype).reshape(-1, self.num_heads, 1, 1)  # (1 or B, H, 1, 1)
        b, _, t_q, _ = context.shape
        merged = context.transpose(1, 2).reshape(b, t_q, -1)  # (B, T_q, D)
        out = self.w_o(merged)
        if head_mask is not None and not bool(head_mask.any()):
            out = torch.zeros_like(out)
        elif head_mask is not None and head_mask.dim() == 2:
            all_off = ~head_mask.bool().any(dim=-1)  # (B,): inputs whose heads are all off
            out = out.masked_fill(all_off.view(-1, 1, 1), 0.0)
        return out, record
