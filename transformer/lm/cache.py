"""Key/value caching for the decoder-only model, on the core's cache (``transformer.layers.LayerCache``):
each layer keeps the keys and values of the tokens it has seen, so a new token costs one query
against them instead of re-running the whole prefix.

The layers are the core's own ``EncoderLayer`` given only the new positions, the look-ahead mask over
every key (``layer_look_ahead_mask(config, i, T_new, past=T_past)``: a local layer's keeps its window) and their ``LayerCache``; the embedding is read at
the new positions (``Embedding(offset=T_past)``). So the cached path computes what
``DecoderLM.forward`` computes, one token at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..core.decoder import DecoderLM
from ..core.layers import LayerCache
from ..core.masks import layer_look_ahead_mask


@dataclass
class KVCache:
    """One ``LayerCache`` per layer: keys and values (B, H, T, d_k) of the T tokens seen so far.
    :func:`forward_cached` appends to it (it is the caller's, never kept on the model)."""

    layers: list[LayerCache] = field(default_factory=list)

    @property
    def length(self) -> int:
        return self.layers[0].length if self.layers else 0


@dataclass(frozen=True)
class CachedOutput:
    """logits (B, T_new, V) for the new tokens (None when not asked: a prompt read only into the cache); the
    cache, grown by them; attention: per layer the weights (B, H, T_new, T_past + T_new), zero above each new
    token's position (empty unless asked)."""

    logits: torch.Tensor | None
    cache: KVCache
    attention: list[torch.Tensor]


@torch.no_grad()
def forward_cached(
    model: DecoderLM,
    ids: torch.Tensor,
    cache: KVCache | None = None,
    need_weights: bool = False,
    head_mask: torch.Tensor | None = None,
    logits: bool = True,
) -> CachedOutput:
    """Run the new tokens ``ids`` (B, T_new) after the ``cache``'s tokens (a new cache when None);
    head_mask (L, H) gates, 1 = on. The cache is extended in place and returned. ``logits=False`` skips the
    output layer (a prompt's tokens before its last: T_new x vocabulary numbers nobody reads, 268 MB for
    256 tokens of Gemma's 262,144)."""
    if cache is None:
        cache = KVCache([LayerCache() for _ in model.layers])
    past = cache.length
    total = past + ids.shape[1]
    if total > model.config.max_len:
        raise ValueError(f"{total} tokens are beyond this model's context of {model.config.max_len}.")
    x, _ = model.embedding(ids, offset=past)  # positions past .. total - 1
    records = []
    for i, (layer, layer_cache) in enumerate(zip(model.layers, cache.layers)):
        gates = None if head_mask is None else head_mask[i]
        # (T_new, T_all): new token i sees keys 0..past+i (a local layer: the last local_window of them);
        # one new token sees every key in a full layer, and in a local one while all keys fit its window:
        # no mask then (PyTorch's kernel needs none either)
        alone = ids.shape[1] == 1 and (i not in model.config.local_layers or total <= model.config.local_window)
        mask = None if alone else layer_look_ahead_mask(model.config, i, ids.shape[1], ids.device, past=past)
        x, weights = layer(x, mask, need_weights, gates, cache=layer_cache)
        if weights is not None:
            records.append(weights.weights)
    out = model.output(model.final_norm(x)) if logits else None
    return CachedOutput(out, cache, records)
