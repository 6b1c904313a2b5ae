"""One decoding step for many generations at once, over the engine's own modules.

Every generation has its own key/value cache and its own position. The work that reads the weights is
done once for all of them: the embedding rows, each layer's norms, query/key/value and output
projections and feed-forward, the final norm and the output layer run on the stacked new tokens
(N, 1, D). Only attention is per generation: each new token's query, rotated at its own position, reads
its own keys (a local layer only its window), as the cached step alone
(``transformer.lm.cache.forward_cached``) computes it; all of them in one padded product per layer over the
generations' caches side by side (:class:`~.batch_cache.BatchCache`), a key past a generation's length
weighted exactly 0. The output layer, when it is a plain linear one, is taken in blocks of vocabulary rows.

Nothing here knows a family: the layer is the engine's ``EncoderLayer`` (its two residual sublayers
with whatever norms they hold), the attention module's own projections (with whatever they add, e.g.
norms of queries and keys) and rotary module. :func:`batch_matches` checks a model against the step
alone once; a model whose layers compute something this step does not reproduce is stepped alone.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..core.decoder import DecoderLM
from ..lm.cache import forward_cached
from .batch_cache import BatchCache


@torch.no_grad()
def batch_step(
    model: DecoderLM, tokens: list[int], batch: BatchCache, gates: list[torch.Tensor | None]
) -> tuple[torch.Tensor, list[np.ndarray]]:
    """One new token per generation after its cache (``batch``, extended in place).

    tokens: N ids; batch: the N generations' caches side by side; gates: N head masks (L, H) or None.
    Returns (logits (N, V), attention: per generation its rows (L, H, T_n) float32 over its T_n keys)."""
    device = next(model.parameters()).device
    pasts = list(batch.lengths)
    if any(past + 1 > model.config.max_len for past in pasts):
        raise ValueError(f"A generation is beyond this model's context of {model.config.max_len}.")
    x = _embedded(model, tokens, pasts, device)  # (N, 1, D)
    batch.make_room()
    positions = torch.tensor(pasts, device=device)  # (N,) where each new key goes
    blocked = _blocked(model.config, pasts, device)  # per kind of layer, (N, 1, 1, T_max)
    weights: list[torch.Tensor] = []  # per layer (N, H, T_max)
    turns: dict = {}  # the rotary angles of every generation's position, once per distinct rotary module
    for i, layer in enumerate(model.layers):
        layer_gates = _layer_gates(gates, i, layer.self_attn.num_heads, device)
        turn = _turner(layer.self_attn.rotary, positions, turns)
        local = i in model.config.local_layers
        attend = _attention(layer.self_attn, i, batch, positions, blocked[local], layer_gates, weights, turn)
        x, _ = layer.attn_block(x, attend)
        x, _ = layer.ffn_block(x, lambda h, ffn=layer.ffn: (ffn(h), None))
    batch.advance()
    every = torch.stack(weights, dim=1).float().cpu().numpy()  # (N, L, H, T_max): one copy, then sliced in numpy
    rows = [every[n, :, :, : past + 1].copy() for n, past in enumerate(pasts)]
    return _output_logits(model.output, model.final_norm(x)[:, -1]), rows


def _embedded(model: DecoderLM, tokens: list[int], pasts: list[int], device) -> torch.Tensor:
    """(N, 1, D) the new tokens embedded at their positions: at once when the embedding has no positions of its
    own (rotary models: the position is turned into the queries and keys), else each at its offset."""
    ids = torch.tensor(tokens, device=device).view(-1, 1)
    if model.embedding.positions is None:
        return model.embedding(ids)[0]
    return torch.cat([model.embedding(ids[n : n + 1], offset=p)[0] for n, p in enumerate(pasts)])


def _blocked(config, pasts: list[int], device) -> dict[bool, torch.Tensor]:
    """{local: (N, 1, 1, T_max) bool}: the keys each generation's new query may not read: past its own
    length, and in a local layer also before its window (the query's own key included in the window)."""
    ends = torch.tensor(pasts, device=device).view(-1, 1) + 1  # (N, 1) keys each generation has
    position = torch.arange(max(pasts) + 1, device=device)  # (T_max,)
    beyond = position >= ends
    masks = {False: beyond.view(len(pasts), 1, 1, -1)}
    if config.local_layers:
        masks[True] = (beyond | (position <= ends - 1 - config.local_window)).view(len(pasts), 1, 1, -1)
    return masks


OUTPUT_ROWS = 2048  # the output layer's rows per product in a batched step (measured: see _output_logits)


def _output_logits(output: torch.nn.Module, h: torch.Tensor) -> torch.Tensor:
    """h (N, D) -> logits (N, V). A plain linear output layer is multiplied OUTPUT_ROWS vocabulary rows
    at a time: the same sums, and on one CPU thread for 20 generations of SmolLM2 (49,152 rows) 24 ms
    instead of 39 ms for one product over the whole matrix (each block's rows stay in cache while every
    generation reads them). Any other output layer (e.g. a packed one) is called as it is."""
    if type(output) is not torch.nn.Linear or h.shape[0] == 1 or h.device.type != "cpu":
        return output(h)
    weight, bias = output.weight, output.bias
    blocks = [
        F.linear(h, weight[start : start + OUTPUT_ROWS], None if bias is None else bias[start : start + OUTPUT_ROWS])
        for start in range(0, weight.shape[0], OUTPUT_ROWS)
    ]
    return torch.cat(blocks, dim=1)


def _layer_gates(gates: list[torch.Tensor | None], layer: int, heads: int, device) -> torch.Tensor | None:
    """(N, H) the gates of one layer (1 where a generation has none), None when no generation has any."""
    if all(g is None for g in gates):
        return None
    ones = torch.ones(heads, device=device)
    return torch.stack([ones if g is None else g[layer].to(device=device, dtype=ones.dtype) for g in gates])


def _turner(rotary, positions: torch.Tensor, turns: dict):
    """x (N, H, 1, d) -> x with generation n's row turned at position ``positions[n]``: what ``rotary(x[n:n+1],
    positions[n])`` gives each (the module's own angles and its two pairings), for all at once; None without
    rotary."""
    if rotary is None:
        return None
    key = (rotary.rotary_dim, rotary.style, rotary.inv_freq.cpu().numpy().tobytes())
    if key not in turns:
        freqs = positions.float()[:, None] * rotary.inv_freq[None, :]  # (N, r/2), as ``rotary.angles`` computes
        turns[key] = tuple(part.view(-1, 1, 1, part.shape[-1]) for part in (freqs.cos(), freqs.sin()))
    cos, sin = turns[key]
    r = rotary.rotary_dim

    def turn(x: torch.Tensor) -> torch.Tensor:
        c, s = cos.to(x.dtype), sin.to(x.dtype)
        rot, rest = x[..., :r], x[..., r:]
        if rotary.style == "interleaved":
            x1, x2 = rot[..., 0::2], rot[..., 1::2]
            turned = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(-2)
        else:
            x1, x2 = rot[..., : r // 2], rot[..., r // 2 :]
            turned = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
        return torch.cat((turned, rest), dim=-1) if rest.shape[-1] else turned

    return turn


def _attention(attn, layer: int, batch: BatchCache, positions, blocked, gates, weights: list, turn):
    """The sublayer function for ``attn_block``: h (N, 1, D) -> (out (N, 1, D), None); the layer's weights
    (N, H, T_max) appended to ``weights``.

    Every generation's new query against its own keys in one padded product: the keys past a generation's
    length (and a local layer's before its window, ``blocked``) get a weight of exactly 0."""

    def attend(h: torch.Tensor):
        # projected together; with no cache the rotary module turns every query and key by position 0,
        # which is no turn at all (cos 0 = 1, sin 0 = 0): each is turned at its own position below
        q, k, v = attn.projections(h, h, h, None, share=False)  # q (N, H, 1, d_k), k, v (N, H_kv, 1, d_k)
        if turn is not None:
            q, k = turn(q), turn(k)
        keys, values = batch.append(layer, k, v, positions)  # (N, H_kv, T_max, d_k)
        n, heads, _, d_k = q.shape
        kv_heads = keys.shape[1]
        grouped = q.reshape(n, kv_heads, heads // kv_heads, d_k)  # the query heads of one key/value head together
        scores = torch.matmul(grouped, keys.transpose(-2, -1)).mul_(1.0 / math.sqrt(d_k))  # (N, H_kv, g, T_max)
        layer_weights = torch.softmax(scores.masked_fill_(blocked, attn.fill), dim=-1).masked_fill_(blocked, 0.0)
        context = torch.matmul(layer_weights, values).view(n, heads, 1, d_k)
        weights.append(layer_weights.view(n, heads, -1))
        if gates is not None:
            context = context * gates.to(context.dtype).view(n, -1, 1, 1)
        merged = context.transpose(1, 2).reshape(n, 1, -1)
        out = F.linear(merged, attn.w_o.weight, attn.w_o.bias)
        if gates is not None:
            out = out.masked_fill(~gates.bool().any(dim=-1).view(-1, 1, 1), 0.0)  # every head off: exactly zero
        return out, None

    return attend


@torch.no_grad()
def batch_matches(model: DecoderLM, tolerance: float = 1e-4) -> bool:
    """Whether :func:`batch_step` gives ``model`` the logits and attention of the step alone (within
    ``tolerance``), on two short made-up prompts of different lengths, one with a head switched off."""
    device = next(model.parameters()).device
    vocab, heads = model.config.vocab_size, model.config.num_heads
    prompts = [[i % vocab for i in (3, 5, 7)], [i % vocab for i in (11, 2, 13, 4, 9)]]
    gate = torch.ones(len(model.layers), heads, device=device)
    gate[0, 0] = 0.0
    gates = [None, gate]
    alone, batched = [], []
    for ids, g in zip(prompts, gates):
        first = forward_cached(model, torch.tensor([ids[:-1]], device=device), None, False, g)
        copy = forward_cached(model, torch.tensor([ids[:-1]], device=device), None, False, g).cache
        out = forward_cached(model, torch.tensor([ids[-1:]], device=device), first.cache, True, g)
        alone.append((out.logits[0, -1], np.stack([w[0, :, -1].float().cpu().numpy() for w in out.attention])))
        batched.append(copy)
    logits, rows = batch_step(model, [ids[-1] for ids in prompts], BatchCache(batched), gates)
    for n, (want_logits, want_rows) in enumerate(alone):
        if not torch.allclose(logits[n], want_logits, atol=tolerance, rtol=0):
            return False
        if rows[n].shape != want_rows.shape or np.abs(rows[n] - want_rows).max() > tolerance:
            return False
    return True
