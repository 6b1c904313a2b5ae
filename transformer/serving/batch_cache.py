"""The key/value caches of a batch of generations, side by side in one tensor per layer.

A batched step appends one key and one value per generation to every layer. Kept in each generation's own
cache, that is a handful of tensor operations per generation per layer (30 layers x 20 generations: some
thousands a step), each of which hands the interpreter's lock back and waits to take it again, and a server
whose pages are running Python at the same moment makes every one of those waits long. Here a layer's
append is one indexed write for the whole batch, and its read one view.

Generation n keeps its first ``lengths[n]`` positions of row n; the storage past them is zeros (finite, so
a blocked key's weight of exactly 0 times its value is 0). A generation's own cache is copied in when the
batch is formed and copied out (:meth:`BatchCache.row`) when the batch changes.
"""

from __future__ import annotations

import torch

from ..core.layers import LayerCache
from ..lm.cache import KVCache

HEADROOM = 32  # positions of room past the longest generation when the storage is made or grown


class BatchCache:
    """keys[i], values[i]: layer i's (N, H_kv, capacity, d_k); ``lengths``: each generation's positions."""

    def __init__(self, caches: list[KVCache]) -> None:
        if not caches or any(cache.length == 0 for cache in caches):
            raise ValueError("A batch is formed from generations that have read at least one token.")
        self.lengths = [cache.length for cache in caches]
        capacity = max(self.lengths) + HEADROOM
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        for i in range(len(caches[0].layers)):
            parts = [cache.layers[i].self_attn.current() for cache in caches]
            self.keys.append(_side_by_side([k for k, _ in parts], capacity))
            self.values.append(_side_by_side([v for _, v in parts], capacity))

    def __len__(self) -> int:
        return len(self.lengths)

    def make_room(self) -> None:
        """Storage for one more position of every generation (grown for all layers at once when full)."""
        needed = max(self.lengths) + 1
        if needed <= self.keys[0].shape[2]:
            return
        capacity = needed + HEADROOM
        self.keys = [_grown(k, capacity) for k in self.keys]
        self.values = [_grown(v, capacity) for v in self.values]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, positions: torch.Tensor):
        """k, v (N, H_kv, 1, d_k): each generation's new key and value, written at ``positions`` (N,) (each
        generation's current length; :meth:`make_room` first). Returns (keys, values) (N, H_kv, T_max, d_k),
        views over the positions up to the longest generation's new one."""
        rows = torch.arange(len(self), device=k.device)
        self.keys[layer][rows, :, positions] = k[:, :, 0]
        self.values[layer][rows, :, positions] = v[:, :, 0]
        longest = max(self.lengths) + 1
        return self.keys[layer][:, :, :longest], self.values[layer][:, :, :longest]

    def advance(self) -> None:
        """Every generation one position longer (after a step has appended to every layer)."""
        self.lengths = [length + 1 for length in self.lengths]

    def row(self, n: int) -> KVCache:
        """Generation ``n``'s cache of its own (a copy of its positions)."""
        return row_cache(zip(self.keys, self.values), n, self.lengths[n])


def row_cache(layers, row: int, length: int) -> KVCache:
    """A cache of its own for row ``row`` of a batch: ``layers`` gives each layer's (keys, values), each
    (B, H_kv, T, d_k); the row's first ``length`` positions are copied."""
    own_layers = []
    for keys, values in layers:
        own = LayerCache()
        own.self_attn.append(keys[row : row + 1, :, :length], values[row : row + 1, :, :length])
        own_layers.append(own)
    return KVCache(own_layers)


def _side_by_side(parts: list[torch.Tensor], capacity: int) -> torch.Tensor:
    """parts: each (1, H, T_n, d) -> (N, H, capacity, d), part n in row n's first T_n positions, zeros after."""
    _, heads, _, width = parts[0].shape
    out = parts[0].new_zeros(len(parts), heads, capacity, width)
    for n, part in enumerate(parts):
        out[n : n + 1, :, : part.shape[2]] = part
    return out


def _grown(storage: torch.Tensor, capacity: int) -> torch.Tensor:
    n, heads, used, width = storage.shape
    out = storage.new_zeros(n, heads, capacity, width)
    out[:, :, :used] = storage
    return out
