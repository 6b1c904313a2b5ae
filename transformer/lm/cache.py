"""Key/value caching for the decoder-only model: each layer keeps the keys and values of the tokens
it has seen, so a new token costs one query against them instead of re-running the whole prefix.

Built from the core layers' own modules (``EncoderLayer.self_attn``'s projections, its residual
blocks and feed-forward) and the pure ``attention_steps``, so the cached path computes exactly what
``DecoderLM.forward`` computes, one token at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..attention import attention_steps
from ..layers import EncoderLayer
from ..masks import look_ahead_mask
from .model import DecoderLM


@dataclass(frozen=True)
class KVCache:
    """keys[l], values[l]: (B, H, T, d_k) of layer l for the T tokens seen so far."""

    keys: tuple[torch.Tensor, ...]
    values: tuple[torch.Tensor, ...]

    @property
    def length(self) -> int:
        return 0 if not self.keys else int(self.keys[0].shape[2])


@dataclass(frozen=True)
class CachedOutput:
    """logits (B, T_new, V) for the new tokens; the cache grown by them; attention: per layer the
    weights (B, H, T_new, T_past + T_new), zero above each new token's position (empty unless asked)."""

    logits: torch.Tensor
    cache: KVCache
    attention: list[torch.Tensor]


def _attend(layer: EncoderLayer, h, past_k, past_v, mask, gates, need_weights):
    """The layer's self-attention on new states ``h`` (B, T_new, D) against cached and new keys."""
    attn = layer.self_attn
    q = attn.split_heads(attn.w_q(h))  # (B, H, T_new, d_k)
    k = attn.split_heads(attn.w_k(h))
    v = attn.split_heads(attn.w_v(h))
    if past_k is not None:
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)  # (B, H, T_all, d_k)
    steps = attention_steps(q, k, v, mask, attn.fill)
    context = steps.output
    if gates is not None:
        context = context * gates.to(context.dtype).reshape(-1, attn.num_heads, 1, 1)
    b, _, t_new, _ = context.shape
    out = attn.w_o(context.transpose(1, 2).reshape(b, t_new, -1))  # (B, T_new, D)
    if gates is not None:
        off = ~gates.bool().reshape(-1, attn.num_heads).any(dim=-1)  # inputs whose heads are all off
        out = out.masked_fill(off.view(-1, 1, 1), 0.0)
    record = steps.weights if need_weights else None
    return out, (record, k, v)


@torch.no_grad()
def forward_cached(
    model: DecoderLM,
    ids: torch.Tensor,
    cache: KVCache | None = None,
    need_weights: bool = False,
    head_mask: torch.Tensor | None = None,
) -> CachedOutput:
    """Run the new tokens ``ids`` (B, T_new) after the ``cache``'s tokens; head_mask (L, H) gates."""
    past = 0 if cache is None else cache.length
    total = past + ids.shape[1]
    if total > model.config.max_len:
        raise ValueError(f"{total} tokens are beyond this model's context of {model.config.max_len}.")
    emb = model.embedding
    positions = 0.0 if emb.positions is None else emb.positions(total)[past:]  # (T_new, D)
    x = emb.token_embeddings(ids) + positions
    mask = look_ahead_mask(total, ids.device)[past:]  # (T_new, T_all): new token i sees keys 0..past+i
    keys, values, records = [], [], []
    for i, layer in enumerate(model.layers):
        gates = None if head_mask is None else head_mask[i]
        pk = None if cache is None else cache.keys[i]
        pv = None if cache is None else cache.values[i]
        x, (record, k, v) = layer.attn_block(
            x, lambda h, lay=layer, pk=pk, pv=pv, g=gates: _attend(lay, h, pk, pv, mask, g, need_weights)
        )
        x, _ = layer.ffn_block(x, lambda h, layer=layer: (layer.ffn(h), None))
        keys.append(k)
        values.append(v)
        if record is not None:
            records.append(record)
    logits = model.output(model.final_norm(x))
    return CachedOutput(logits, KVCache(tuple(keys), tuple(values)), records)
