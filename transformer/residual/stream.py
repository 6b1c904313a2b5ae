"""One input's residual stream, layer by layer, and (optionally) its split into the parts that wrote it.

The walk runs the model's own modules in the order its forward does (embedding, then each layer's
sublayers through their ``Sublayer``, so pre- and post-norm follow the layer's own choice) and keeps
the stream after every layer. Nothing is stored on the model: the attention weights come back from
each attention call, and each head's share of an attention sublayer is that same module called with
the head gates (``head_mask``) of one head on: the output is then the head's share plus the output
projection's bias, so the bias is read as (Σ_h out_h - out) / (H - 1).

The parts (``Parts``): the embedding, each head of each attention sublayer (self, and cross-attention
for an encoder-decoder's decoder), each feed-forward block and one ``bias`` row that collects the
output projections' biases and every norm's bias. After a post-norm sublayer every part goes through
that norm held at its forward-pass scale (``frozen.py``), so at every depth the parts add up to the
stream exactly (within float rounding).

Shapes: T tokens of one input (the batch of one is dropped), D model size, L layers, H heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ..core.attention import HeadWeights, blocked_cells
from ..core.decoder import DecoderLM
from ..core.masks import decoder_self_mask, layer_look_ahead_mask, padding_mask
from ..core.model import EncoderDecoder, SequenceClassifier
from .frozen import freeze_norm

EMBEDDING, HEAD, CROSS_HEAD, FFN, BIAS = "embedding", "head", "cross-head", "ffn", "bias"


@dataclass
class Parts:
    """Vectors (P, T, D) that sum to the stream; kind, layer (-1 for embedding and bias) and head
    (-1 unless a head) of each row."""

    kinds: list[str] = field(default_factory=list)
    layers: list[int] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)
    rows: list[torch.Tensor] = field(default_factory=list)

    def add(self, kind: str, layer: int, head: int, vector: torch.Tensor) -> None:
        self.kinds.append(kind)
        self.layers.append(layer)
        self.heads.append(head)
        self.rows.append(vector)

    def stacked(self) -> torch.Tensor:
        return torch.stack(self.rows)

    def through(self, fn) -> None:
        """Every row replaced by ``fn(stacked rows)`` (a frozen norm, a linear map)."""
        self.rows = list(fn(self.stacked()))

    def add_to_bias(self, vector: torch.Tensor) -> None:
        self.rows[self.kinds.index(BIAS)] = self.rows[self.kinds.index(BIAS)] + vector


@dataclass(frozen=True)
class StreamTrace:
    """streams: L + 1 tensors (T, D): the embedding's output, then the stream after each layer (before
    any final norm); attention: one HeadWeights (1, H, T_q, T_k) per layer (self-attention; T_q 1 when
    one query's rows were asked, empty when none); cross: the decoder's cross-attention per layer (empty
    for other models); parts: the split of the last stream (at every position or the one asked), or None."""

    streams: list[torch.Tensor]
    attention: list[HeadWeights]
    cross: list[HeadWeights]
    parts: Parts | None


@dataclass(frozen=True)
class Keep:
    """What a walk keeps besides the streams: ``split`` the parts, only at position ``at`` when given
    (P, 1, D; else P, T, D); ``weights`` every layer's attention record (L × H × T × T_k: leave it out
    of long inputs); ``row`` instead, only the attention rows of that query position (H, T_k per layer)."""

    split: bool = False
    at: int | None = None
    weights: bool = True
    row: int | None = None


@torch.no_grad()
def trace(
    model: nn.Module,
    ids: torch.Tensor,
    target: torch.Tensor | None = None,
    split: bool = False,
    weights: bool = True,
    at: int | None = None,
    row: int | None = None,
) -> StreamTrace:
    """ids (1, T) (an encoder-decoder's source, with ``target`` (1, T_t) its decoder input) -> the trace.

    ``split``: the parts of the stream, only at position ``at`` when given; ``weights``: keep every
    layer's attention (False: none, and each layer's attention runs without materialising them unless
    ``row`` asks for one query's rows: each layer's record then holds weights (1, H, 1, T_k))."""
    if ids.dim() != 2 or ids.shape[0] != 1:
        raise ValueError(f"trace reads one input: ids of shape (1, T), not {tuple(ids.shape)}.")
    keep = Keep(split, at, weights, row)
    if isinstance(model, DecoderLM):
        masks = [layer_look_ahead_mask(model.config, i, ids.shape[1], ids.device) for i in range(len(model.layers))]
        return _walk(model.embedding, model.layers, ids, masks, None, None, keep)
    if isinstance(model, EncoderDecoder):
        if target is None:
            raise ValueError("An encoder-decoder's stream is its decoder's: give the target ids too.")
        memory = model.encoder(ids).hidden
        real = ids != model.config.pad_id
        self_mask = _used(decoder_self_mask(target, model.decoder.pad_id))
        cross_mask = _used(real[:, None, None, :].expand(-1, 1, target.shape[1], -1))
        return _walk(model.decoder.embedding, model.decoder.layers, target, self_mask, memory, cross_mask, keep)
    if isinstance(model, SequenceClassifier):
        mask = _used(padding_mask(ids, model.encoder.pad_id))
        return _walk(model.encoder.embedding, model.encoder.layers, ids, mask, None, None, keep)
    raise ValueError(f"No residual stream for a {type(model).__name__}: use a language model or an encoder.")


def _used(mask: torch.Tensor) -> torch.Tensor | None:
    """The mask, or None when it blocks nothing (as the models pass it to their layers)."""
    return None if blocked_cells(mask) is None else mask


def _walk(embedding, layers, ids, mask, memory, cross_mask, keep: Keep) -> StreamTrace:
    """``mask``: the self-attention mask of every layer, or a list of one per layer (a language model's)."""
    x, _ = embedding(ids)
    parts = None
    if keep.split:
        parts = Parts()
        parts.add(EMBEDDING, -1, -1, _kept(x[0], keep))
        parts.add(BIAS, -1, -1, torch.zeros_like(_kept(x[0], keep)))
    streams, attention, cross = [x[0]], [], []
    for i, layer in enumerate(layers):
        self_mask = mask[i] if isinstance(mask, list) else mask
        if hasattr(layer, "self_block"):  # a decoder layer: self-attention, cross-attention, feed-forward
            x, weights = _attention(layer.self_block, layer.self_attn, x, None, self_mask, parts, i, HEAD, keep)
            x, crossed = _attention(layer.cross_block, layer.cross_attn, x, memory, cross_mask, parts, i, CROSS_HEAD,
                                    keep)  # fmt: skip
            if crossed is not None:
                cross.append(crossed)
        else:
            x, weights = _attention(layer.attn_block, layer.self_attn, x, None, self_mask, parts, i, HEAD, keep)
        if weights is not None:
            attention.append(weights)
        x = _feed_forward(layer.ffn_block, layer.ffn, x, parts, i, keep)
        streams.append(x[0])
    return StreamTrace(streams, attention, cross, parts)


def _kept(rows: torch.Tensor, keep: Keep) -> torch.Tensor:
    """rows (T, ...) -> the positions the parts keep: (1, ...) at ``keep.at``, else all."""
    return rows if keep.at is None else rows[keep.at : keep.at + 1]


def _record(weights: HeadWeights | None, keep: Keep) -> HeadWeights | None:
    """The attention record a walk keeps: all of it, one query's rows, or nothing."""
    if weights is None or keep.weights:
        return weights
    if keep.row is None:
        return None
    r = slice(keep.row, keep.row + 1)
    return HeadWeights(weights.weights[:, :, r].clone(), weights.queries[:, :, r].clone(), weights.keys)


def _attention(block, attn, x, memory, mask, parts: Parts | None, layer: int, kind: str, keep: Keep):
    """One attention sublayer through its Sublayer; adds each head's share to ``parts``."""
    need = keep.weights or keep.row is not None

    def run(h):
        kv = h if memory is None else memory
        out, weights = attn(h, kv, kv, mask, need)
        shares = None if parts is None else _head_shares(attn, h, memory, mask, out, keep)
        return out, (out, _record(weights, keep), shares)

    new_x, (out, weights, shares) = block(x, run)
    if parts is not None:
        heads, bias = shares
        if (post := getattr(block, "post_norm", None)) is not None:  # x + post_norm(out): held at out's scale
            frozen = freeze_norm(post, _kept(out[0], keep))
            heads, bias = frozen.apply(heads), frozen.apply(bias.expand_as(heads[0])) + frozen.bias
        for h, share in enumerate(heads):
            parts.add(kind, layer, h, share)
        parts.add_to_bias(bias)
        _after_sublayer(block, _kept(x[0] + out[0], keep), parts)
    return new_x, weights


def _head_shares(attn, h: torch.Tensor, memory, mask, out: torch.Tensor, keep: Keep):
    """Each head's share of ``out`` at the kept positions (H, T or 1, D) and the output projection's
    bias (D,): the module run once per head with only that head's gate on (all H runs as one batch)."""
    n = attn.num_heads
    gates = torch.eye(n, dtype=h.dtype, device=h.device)  # (H, H): row h keeps head h only
    query = h.expand(n, -1, -1)
    kv = query if memory is None else memory.expand(n, -1, -1)
    each, _ = attn(query, kv, kv, mask, False, gates)  # (H, T, D): head h's share + bias
    each, out = each[:, slice(None) if keep.at is None else slice(keep.at, keep.at + 1)], _kept(out[0], keep)
    if n == 1:
        bias = attn.w_o.bias if attn.w_o.bias is not None else torch.zeros_like(out[0])
        bias = bias.to(out.dtype)
    else:
        bias = ((each.sum(0) - out) / (n - 1)).mean(0)  # the same vector at every position
    return each - bias, bias


def _feed_forward(block, ffn, x, parts: Parts | None, layer: int, keep: Keep):
    new_x, out = block(x, lambda h: (lambda o: (o, o))(ffn(h)))
    if parts is not None:
        share = _kept(out[0], keep)
        if (post := getattr(block, "post_norm", None)) is not None:  # x + post_norm(ffn(...)): held at its scale
            frozen = freeze_norm(post, share)
            share = frozen.apply(share)
            parts.add_to_bias(frozen.bias)
        parts.add(FFN, layer, -1, share)
        _after_sublayer(block, _kept(x[0] + out[0], keep), parts)
    return new_x


def _after_sublayer(block, summed: torch.Tensor, parts: Parts) -> None:
    """Post-norm: every part through the block's norm held at the forward pass's scale (``summed``:
    the kept positions' input to the norm), its bias joins ``bias``."""
    if block.norm_first:
        return
    frozen = freeze_norm(block.norm, summed)
    parts.through(frozen.apply)
    parts.add_to_bias(frozen.bias)
