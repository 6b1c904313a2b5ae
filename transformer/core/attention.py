"""Scaled dot-product attention that returns per-head weights, and the per-head weights' record
(``HeadWeights``); the projections around it, grouped-query attention, rotary positions and the
key/value cache are in ``multihead.py``.

Shapes: B batch, H heads, T_q queries, T_k keys, d_k per-head size, D model size.
Masks are True where a query may attend (see ``masks.py``).

Three ways through one head's arithmetic, the same numbers (within float rounding):
:func:`attention_steps` keeps every stage (the teaching pages), :func:`attention_weights` keeps
only the weights and writes them in place (every forward that returns weights), and
:func:`fast_attention` keeps none (PyTorch's fused kernel).
"""

from __future__ import annotations

import ctypes
import math
import sys
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


def compact_mask(mask: torch.Tensor) -> torch.Tensor:
    """The same mask without its broadcast copies: every dimension that an ``expand`` repeated
    (stride 0) shrinks to size 1, so a (B, 1, T, T) padding mask made from (B, T) ids costs B·T,
    not B·T², to invert, test or fill with. Broadcasts to the same cells as ``mask``."""
    index = tuple(
        slice(0, 1) if stride == 0 and size > 1 else slice(None) for size, stride in zip(mask.shape, mask.stride())
    )
    return mask[index]


def blocked_cells(mask: torch.Tensor | None) -> torch.Tensor | None:
    """~mask in its compact form (True = blocked), or None when the mask blocks nothing."""
    if mask is None:
        return None
    blocked = ~compact_mask(mask)
    return blocked if bool(blocked.any()) else None


def _layer_blocked(mask: torch.Tensor | None) -> torch.Tensor | None:
    """:func:`blocked_cells` for one attention call inside a layer. Off the CPU the test whether
    anything is blocked is left out: reading its answer makes the host wait for the device, once
    per layer (the models test their masks once per forward and pass None when nothing is blocked)."""
    if mask is not None and mask.device.type != "cpu":
        return ~compact_mask(mask)
    return blocked_cells(mask)


HUGE_PAGE = 2 * 1024 * 1024  # bytes of one transparent huge page on x86-64 and arm64 Linux
MADV_HUGEPAGE = 14


def weights_buffer(*shape: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """An uninitialised float32 tensor to collect attention weights in, e.g. (B, L, H, T, T).

    On a Linux CPU, a buffer of several megabytes asks the kernel for transparent huge pages
    (``madvise(MADV_HUGEPAGE)`` on its 2 MB-aligned interior): its first touch then costs one
    fault per 2 MB instead of one per 4 KB, which on long inputs is a large part of writing the
    weights at all (32 MB: ~18 ms of page faults on 4 KB pages here). A refused hint changes nothing.
    """
    out = torch.empty(shape, dtype=torch.float32, device=device)
    if out.device.type == "cpu" and out.nbytes >= 4 * HUGE_PAGE and _LIBC is not None:
        start = -out.data_ptr() % HUGE_PAGE + out.data_ptr()
        length = (out.data_ptr() + out.nbytes - start) // HUGE_PAGE * HUGE_PAGE
        _LIBC.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), MADV_HUGEPAGE)
    return out


def _libc():
    """The C library where ``madvise`` may take MADV_HUGEPAGE (Linux), else None. The process's own
    symbols (``CDLL(None)``): no search for the library file, which would run ``ldconfig`` at import."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def _needs_grad(*tensors: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def attention_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    fill: float = -1e9,
    dropout: nn.Module | None = None,
    out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output (..., T_q, d_v), weights (..., T_q, T_k)): :func:`attention_steps`' output and
    weights without its other stages. q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v),
    mask broadcastable to (..., T_q, T_k), True = may attend.

    out: a float32 tensor (..., T_q, T_k), e.g. one layer's slice of a buffer that holds every
    layer's weights, to write the weights into; the weights returned are then ``out``. Without
    gradients the scores are computed straight into it (scaled in the matrix product), blocked
    cells filled only when the mask blocks something, and the softmax taken in place, so the
    call allocates no T_q × T_k tensor of its own. Under autocast (half precision) the weights
    are rounded to v's dtype first: exactly the numbers the product with V used.
    """
    blocked = _layer_blocked(mask)
    in_place = q.dtype == k.dtype == torch.float32 and (out is None or out.dtype == torch.float32)
    if in_place and not _needs_grad(q, k, v):
        if out is None:
            out = q.new_empty(*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
        open_keys = _open_key_prefixes(blocked, out)
        if open_keys is not None and (dropout is None or not dropout.training):
            return _prefix_rows(q, k, v, open_keys, out), out
        weights = _weights_in_place(q, k, blocked, fill, out)
    else:
        weights = _weights_functional(q, k, v, blocked, fill)
        if out is not None:
            out.copy_(weights.detach())
    attended = weights if dropout is None or not dropout.training else dropout(weights)
    return _times_values(attended.to(v.dtype), v), weights if out is None else out


def _weights_functional(q, k, v, blocked: torch.Tensor | None, fill: float) -> torch.Tensor:
    """The weights out of place, with autograd and for half precision (as attention_steps)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if blocked is not None:
        scores = scores.masked_fill(blocked, fill)
    weights = torch.softmax(scores.float(), dim=-1)
    if blocked is not None:
        weights = weights.masked_fill(blocked, 0.0)
    return weights.to(v.dtype)


def _weights_in_place(q, k, blocked: torch.Tensor | None, fill: float, out: torch.Tensor) -> torch.Tensor:
    """softmax(QKᵀ/√d_k, masked) written into ``out`` (..., T_q, T_k) float32, step by step in place.
    A non-contiguous ``out`` (a layer's slice of a (B, L, H, T, T) buffer) is filled input by
    input on the CPU, so no stage needs a contiguous copy of it; on a GPU, where each input's
    stages would be kernel launches of their own, the batch is computed at once in a contiguous
    tensor and copied in, and that tensor (the same numbers) is returned for the product with V."""
    if out.dim() > 3 and not out.is_contiguous() and out.device.type != "cpu":
        batch = _weights_in_place(q, k, blocked, fill, out.new_empty(out.shape))
        out.copy_(batch)
        return batch
    if out.dim() > 3 and not out.is_contiguous():
        for i in range(out.shape[0]):
            part = None if blocked is None else _row(blocked, i, out.dim())
            _weights_in_place(_row(q, i, out.dim()), _row(k, i, out.dim()), part, fill, out[i])
        return out
    lead, n = out.shape[:-2], out.shape[:-2].numel()
    q3 = _batched(q, lead, n)  # (n, T_q, d_k)
    k3 = _batched(k, lead, n)  # (n, T_k, d_k)
    o3 = out.view(n, *out.shape[-2:])
    torch.baddbmm(o3, q3, k3.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(q.shape[-1]), out=o3)
    if blocked is not None:
        out.masked_fill_(blocked, fill)
    torch.softmax(o3, dim=-1, out=o3)
    if blocked is not None:
        # a fill of -1e9 already gives 0; this also turns an all-blocked row into zeros, not NaN
        out.masked_fill_(blocked, 0.0)
    return out


def _open_key_prefixes(blocked: torch.Tensor | None, out: torch.Tensor) -> list[int] | None:
    """For a padded batch: how many keys each input may see, when its open keys are the first ones
    for every query (a key-padding mask, compact (B, 1, 1, T_k), padding at the end); else None.
    Only on the CPU, where skipping the padding saves memory traffic: on a GPU the loop over inputs
    would be kernel launches and reading the counts a wait for the device."""
    if (
        blocked is None
        or out.device.type != "cpu"
        or out.dim() != 4
        or blocked.dim() != 4
        or blocked.shape[1:3] != (1, 1)
    ):
        return None
    keep = ~blocked[:, 0, 0]  # (B or 1, T_k)
    counts = keep.sum(-1)  # (B or 1,)
    positions = torch.arange(keep.shape[-1], device=keep.device)
    if not bool((keep == (positions < counts[:, None])).all()):
        return None
    counts = counts.tolist()
    return counts * out.shape[0] if len(counts) == 1 else counts


def _prefix_rows(q, k, v, open_keys: list[int], out: torch.Tensor) -> torch.Tensor:
    """Attention of a padded batch input by input over its n_i open keys only: the weights go into
    out[i, :, :, :n_i] (its blocked columns set to exactly 0, as masking gives), so neither the
    masked fill nor the softmax touches padding. Returns the output (B, H, T_q, d_v)."""
    scale, rows = 1.0 / math.sqrt(q.shape[-1]), []
    for i, n in enumerate(open_keys):
        qi, ki, vi, oi = _row(q, i, 4), _row(k, i, 4), _row(v, i, 4), out[i]  # (H, T, ·)
        if n < oi.shape[-1]:
            oi[..., n:] = 0.0
        if n == 0:  # every key blocked: zeros, not NaN
            rows.append(vi.new_zeros(*qi.shape[:-1], vi.shape[-1]))
            continue
        view = oi[..., :n]  # (H, T_q, n): row stride T_k, written in place
        torch.baddbmm(view, qi, ki[:, :n].transpose(1, 2), beta=0.0, alpha=scale, out=view)
        torch.softmax(view, dim=-1, out=view)
        rows.append(torch.bmm(view, vi[:, :n]))
    return torch.stack(rows)


def _batched(t: torch.Tensor, lead: torch.Size, n: int) -> torch.Tensor:
    """t (..., T, d) broadcast to the leading dims ``lead`` and merged: (n, T, d)."""
    if t.shape[:-2] != lead:
        t = t.expand(*lead, *t.shape[-2:])
    return t.reshape(n, *t.shape[-2:])


def _row(t: torch.Tensor, i: int, ndim: int) -> torch.Tensor:
    """Index ``i`` of the first of ``ndim`` dims that ``t`` broadcasts to."""
    if t.dim() < ndim:
        return t
    return t[i] if t.shape[0] > 1 else t[0]


def _times_values(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """weights (..., T_q, T_k) @ v (..., T_k, d_v) without copying a non-contiguous ``weights`` on
    the CPU (on a GPU one copy costs less than a product per input)."""
    if weights.dim() > 3 and not weights.is_contiguous() and weights.device.type == "cpu":
        return torch.stack([_times_values(w, _row(v, i, weights.dim())) for i, w in enumerate(weights)])
    return weights @ v


def share_kv_heads(kv: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, H_kv, T, d) -> (B, heads, T, d): each key/value head repeated for the query heads of its group."""
    b, h_kv, t, d = kv.shape
    return kv[:, :, None].expand(b, h_kv, heads // h_kv, t, d).reshape(b, heads, t, d)


def fast_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, fill: float, dropout_p: float
) -> torch.Tensor:
    """Same output as :func:`attention_steps` through PyTorch's fused kernel; no weights. q (B, H, T_q, d_k);
    k, v (B, H or H_kv, T_k, d_k): grouped key/value heads are shared by the kernel, not copied.

    Without a mask, PyTorch's CPU kernel turns a row of NaN scores into zeros instead of NaN (a model
    with NaN weights would look finite): on the CPU, queries or keys that are not all finite take
    :func:`attention_weights` instead, which keeps the NaN. The CUDA kernels keep NaN themselves
    (tests/test_cuda.py), so on CUDA the check, a wait for the device, is left out."""
    grouped = k.shape[-3] != q.shape[-3]  # grouped-query attention: k, v (..., H_kv, T_k, d_k), the kernel shares them
    blocked = _layer_blocked(mask)
    if blocked is None:
        checked = q.device.type != "cuda"  # the CPU's kernel, and others not shown to keep NaN
        if checked and not bool(torch.isfinite(q.sum() + k.sum())):  # any NaN or ±inf (or a sum past float range)
            k, v = (share_kv_heads(t, q.shape[-3]) for t in (k, v)) if grouped else (k, v)
            return attention_weights(q, k, v, None, fill, nn.Dropout(dropout_p) if dropout_p else None)[0]
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, enable_gqa=grouped)
    additive = torch.zeros(blocked.shape, dtype=q.dtype, device=q.device).masked_fill(blocked, fill)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, dropout_p=dropout_p, enable_gqa=grouped)
    any_open = (~blocked).any(dim=-1, keepdim=True)  # (..., T_q or 1, 1): all-blocked rows give zeros
    return out * any_open


@dataclass(frozen=True)
class HeadWeights:
    """Per-head attention of one layer: weights (B, H, T_q, T_k) softmax after masking, and the
    queries (B, H, T_q, d_k) and keys (B, H, T_k, d_k) they came from.

    The pre-mask scores QKᵀ/√d_k are not kept (they would cost as much as the weights again):
    :attr:`scores` computes them from the queries and keys when a view asks for them.
    """

    weights: torch.Tensor
    queries: torch.Tensor
    keys: torch.Tensor

    @property
    def scores(self) -> torch.Tensor:
        """(B, H, T_q, T_k) QKᵀ/√d_k before masking, computed now (as :func:`attention_steps` does)."""
        return self.queries @ self.keys.transpose(-2, -1) / math.sqrt(self.queries.shape[-1])
