"""Attention masks.

Convention (DESIGN.md): a boolean mask is True where a query **may attend** to a key,
as in the course notebooks' ``masked_fill(mask == 0, -1e9)``.

* padding mask: (B, 1, T_q, T_k); keys that are ``<pad>`` are blocked. Rows of ``<pad>``
  queries are *not* blocked: they attend to the real tokens like any other query, and
  their outputs are ignored downstream (pooling skips them, the app hides them). This
  keeps every row a proper distribution, with no all-blocked rows.
* look-ahead mask: (T, T) lower-triangular; query t may see keys 0..t.

PyTorch's ``nn.MultiheadAttention`` uses the opposite convention (True = blocked):
convert with :func:`to_torch_blocked` at that boundary.
"""

from __future__ import annotations

import torch


def padding_mask(ids: torch.Tensor, pad_id: int | None, query_length: int | None = None) -> torch.Tensor:
    """(B, T_k) token ids -> (B, 1, T_q, T_k) bool, False at ``<pad>`` keys (none when ``pad_id`` is None)."""
    keep = torch.ones_like(ids, dtype=torch.bool) if pad_id is None else ids != pad_id  # (B, T_k)
    t_q = ids.shape[1] if query_length is None else query_length
    return keep[:, None, None, :].expand(-1, 1, t_q, -1)


def look_ahead_mask(length: int, device: torch.device | str | None = None, past: int = 0) -> torch.Tensor:
    """(T, T) bool, True on and below the diagonal. With ``past`` positions already decoded
    (incremental decoding with a key/value cache): (T, past + T), query t at position past + t
    sees keys 0 .. past + t."""
    return torch.ones(length, past + length, dtype=torch.bool, device=device).tril(past)


def layer_look_ahead_mask(config, layer: int, length: int, device=None, past: int = 0) -> torch.Tensor:
    """The look-ahead mask of layer ``layer`` of a decoder-only model, (T, past + T) bool: as
    ``look_ahead_mask``, and for a layer in ``config.local_layers`` only the last ``config.local_window``
    keys, the query's own included (query t sees keys t - window + 1 .. t)."""
    mask = look_ahead_mask(length, device, past)
    if layer in config.local_layers:
        mask = mask.triu(past - config.local_window + 1)
    return mask


def decoder_self_mask(ids: torch.Tensor, pad_id: int | None, past: int = 0) -> torch.Tensor:
    """Padding mask combined with the look-ahead mask, as a decoder uses it: (B, 1, T, T).
    With ``past`` > 0, ids (B, past + T) are every target id so far and the mask covers the last
    T queries only: (B, 1, T, past + T)."""
    length = ids.shape[1] - past
    return combine(padding_mask(ids, pad_id, length), look_ahead_mask(length, ids.device, past))


def combine(*masks: torch.Tensor) -> torch.Tensor:
    """Logical AND of masks that broadcast together (a cell is open only if open in all)."""
    if not masks:
        raise ValueError("combine() needs at least one mask.")
    out = masks[0]
    for mask in masks[1:]:
        out = out & mask
    return out


def to_torch_blocked(mask: torch.Tensor) -> torch.Tensor:
    """Our convention (True = may attend) -> PyTorch's ``attn_mask``/``key_padding_mask`` (True = blocked)."""
    return ~mask


def key_padding_from(mask: torch.Tensor) -> torch.Tensor:
    """(B, 1, T_q, T_k) padding mask -> PyTorch ``key_padding_mask`` (B, T_k), True = blocked."""
    return ~mask[:, 0, 0, :]
