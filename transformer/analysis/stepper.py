"""One attention head, stage by stage, computed with the real model (for the teaching pages and notebooks).

:func:`head_steps` recomputes one encoder layer's head from the model's own weights:
QKᵀ -> ÷√d_k -> masked -> softmax -> × V, optionally with a mask of the caller's choosing.
With the default mask its weights are the ones :func:`transformer.analyze` reports.
Nothing is stored on or changed in the model (it may be shared by many sessions).
Masks follow the package convention: True where a query **may attend** to a key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.attention import attention_steps
from ..core.loaded import LoadedModel
from ..core.masks import decoder_self_mask, padding_mask


@dataclass(frozen=True)
class HeadSteps:
    """Every stage of one head for one input of T tokens (d_k = the head size). All numpy float32
    except ``mask`` (bool).

    q, k, v (T, d_k); mask (T, T) True = may attend; scores (T, T) = QKᵀ; scaled (T, T) = scores / √d_k;
    masked (T, T) = scaled with blocked cells set to ``fill``; weights (T, T) softmax of ``masked``,
    exactly 0 where blocked (a fully blocked row is all 0); output (T, d_k) = weights @ v.
    """

    layer: int
    head: int
    fill: float
    mask: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    output: np.ndarray

    @property
    def d_k(self) -> int:
        return int(self.q.shape[-1])


def _encoder(loaded: LoadedModel) -> torch.nn.Module:
    """The encoder of a classifier or an encoder-decoder model."""
    encoder = getattr(loaded.model, "encoder", None)
    if encoder is None:
        raise ValueError("This model has no encoder to step through.")
    return encoder


def _check_inputs(loaded: LoadedModel, ids: torch.Tensor, layer: int, head: int) -> None:
    cfg = loaded.config
    if loaded.model.training:
        raise ValueError("The stepper needs a model in eval mode (call model.eval() once after loading).")
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] < 1:
        raise ValueError(f"ids must have shape (1, T) with T >= 1; got {tuple(ids.shape)}.")
    if not 0 <= layer < cfg.num_layers:
        raise ValueError(f"layer must be in 0 .. {cfg.num_layers - 1}; got {layer}.")
    if not 0 <= head < cfg.num_heads:
        raise ValueError(f"head must be in 0 .. {cfg.num_heads - 1}; got {head}.")


@torch.no_grad()
def layer_input(loaded: LoadedModel, ids: torch.Tensor, layer: int) -> torch.Tensor:
    """The hidden states (1, T, D) entering encoder layer ``layer``: the embedding and layers
    0 .. layer-1 run exactly as the model runs them (its own padding mask, eval mode, no grad)."""
    encoder = _encoder(loaded)
    mask = padding_mask(ids, loaded.config.pad_id)  # (1, 1, T, T)
    x, _ = encoder.embedding(ids)
    for block in encoder.layers[:layer]:
        x, _ = block(x, mask)
    return x


def default_mask(loaded: LoadedModel, ids: torch.Tensor) -> np.ndarray:
    """The mask the model itself uses for ``ids`` (1, T): (T, T) bool, False at ``<pad>`` keys."""
    return padding_mask(ids, loaded.config.pad_id)[0, 0].cpu().numpy()


@torch.no_grad()
def head_steps(
    loaded: LoadedModel,
    ids: torch.Tensor,
    layer: int,
    head: int,
    mask: np.ndarray | torch.Tensor | None = None,
    fill: float | None = None,
) -> HeadSteps:
    """Head ``head`` of encoder layer ``layer`` for ``ids`` (1, T), every stage.

    mask: (T, T) bool, True = may attend, used for this head only (earlier layers always run
    with the model's own mask); None = the model's own padding mask. fill: the score given to
    blocked cells (default: the model's ``mask_fill``). Pre-norm models attend over
    ``norm(x)``, as the layer does.
    """
    _check_inputs(loaded, ids, layer, head)
    device = next(loaded.model.parameters()).device
    ids = ids.to(device)
    t = ids.shape[1]
    own = padding_mask(ids, loaded.config.pad_id)[0, 0]  # (T, T)
    chosen = own if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool), device=device)
    if chosen.shape != (t, t):
        raise ValueError(f"The mask must have shape ({t}, {t}) for {t} tokens; got {tuple(chosen.shape)}.")
    block = _encoder(loaded).layers[layer]
    x = layer_input(loaded, ids, layer)
    h = block.attn_block.norm(x) if loaded.config.norm_first else x  # what self_attn sees
    fill = float(loaded.config.mask_fill if fill is None else fill)
    return head_stages(block.self_attn, h, layer, head, chosen, fill)


def head_stages(
    attn: torch.nn.Module, h: torch.Tensor, layer: int, head: int, mask: torch.Tensor, fill: float
) -> HeadSteps:
    """Every stage of head ``head`` of the self-attention module ``attn`` over h (1, T, D) under
    ``mask`` (T, T), True = may attend (any stack of self-attention layers steps through this)."""
    q, k, v = (t[0, head] for t in attn.projections(h, h, h))  # (T, d_k) each, rotated where the model rotates
    steps = attention_steps(q, k, v, mask, fill)  # the model's own arithmetic
    return HeadSteps(
        layer=layer,
        head=head,
        fill=fill,
        mask=mask.cpu().numpy(),
        q=_np(q),
        k=_np(k),
        v=_np(v),
        scores=_np(q @ k.T),
        scaled=_np(steps.scores),
        masked=_np(steps.masked_scores),
        weights=_np(steps.weights),
        output=_np(steps.output),
    )


@torch.no_grad()
def decoder_layer_input(loaded: LoadedModel, src: torch.Tensor, tgt: torch.Tensor, layer: int) -> torch.Tensor:
    """The target states (1, T_t, D) entering decoder layer ``layer`` of an encoder-decoder model:
    the encoder over src (1, T_s), the target embedding and decoder layers 0 .. layer-1, each with
    the model's own masks (look-ahead + target padding; source padding for cross-attention)."""
    model, cfg = loaded.model, loaded.config
    memory = model.encoder(src).hidden  # (1, T_s, D)
    keep = src != cfg.pad_id  # (1, T_s)
    self_mask = decoder_self_mask(tgt, cfg.target_padding_id)  # (1, 1, T_t, T_t)
    cross_mask = keep[:, None, None, :].expand(-1, 1, tgt.shape[1], -1)  # (1, 1, T_t, T_s)
    y, _ = model.decoder.embedding(tgt)
    for block in model.decoder.layers[:layer]:
        y, _, _ = block(y, memory, self_mask, cross_mask)
    return y


@torch.no_grad()
def decoder_head_steps(
    loaded: LoadedModel,
    src: torch.Tensor,
    tgt: torch.Tensor,
    layer: int,
    head: int,
    mask: np.ndarray | torch.Tensor | None = None,
    fill: float | None = None,
) -> HeadSteps:
    """Head ``head`` of decoder layer ``layer``'s masked self-attention for target ids tgt (1, T_t)
    given source ids src (1, T_s), every stage. mask: (T_t, T_t) bool, True = may attend; None =
    the model's own (look-ahead and target padding), so the weights are the ones
    :func:`transformer.analyze` reports as ``decoder_self_attention``."""
    cfg = loaded.config
    if cfg.kind != "encoder-decoder":
        raise ValueError("This model has no decoder: pick an encoder-decoder model to step through one.")
    if loaded.model.training:
        raise ValueError("The stepper needs a model in eval mode (call model.eval() once after loading).")
    if src.dim() != 2 or src.shape[0] != 1 or tgt.dim() != 2 or tgt.shape[0] != 1 or tgt.shape[1] < 1:
        raise ValueError(f"src and tgt must have shape (1, T); got {tuple(src.shape)} and {tuple(tgt.shape)}.")
    if not 0 <= layer < cfg.num_decoder_layers:
        raise ValueError(f"layer must be in 0 .. {cfg.num_decoder_layers - 1}; got {layer}.")
    if not 0 <= head < cfg.num_heads:
        raise ValueError(f"head must be in 0 .. {cfg.num_heads - 1}; got {head}.")
    device = next(loaded.model.parameters()).device
    src, tgt = src.to(device), tgt.to(device)
    t = tgt.shape[1]
    own = decoder_self_mask(tgt, cfg.target_padding_id)[0, 0]  # (T_t, T_t)
    chosen = own if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool), device=device)
    if chosen.shape != (t, t):
        raise ValueError(f"The mask must have shape ({t}, {t}) for {t} target tokens; got {tuple(chosen.shape)}.")
    block = loaded.model.decoder.layers[layer]
    y = decoder_layer_input(loaded, src, tgt, layer)
    h = block.self_block.norm(y) if cfg.norm_first else y  # what self_attn sees
    fill = float(cfg.mask_fill if fill is None else fill)
    return head_stages(block.self_attn, h, layer, head, chosen, fill)


def _np(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


@dataclass(frozen=True)
class RowChange:
    """How one query's attention changed between two masks.

    query: the row; newly_blocked / newly_opened: key indices; moved: the weight the newly blocked
    keys held before (now spread over the open keys); before / after: the row's weights (T,);
    output_shift: L2 distance between the row's outputs.
    """

    query: int
    newly_blocked: list[int]
    newly_opened: list[int]
    moved: float
    before: np.ndarray
    after: np.ndarray
    output_shift: float


def mask_changes(before: HeadSteps, after: HeadSteps) -> list[RowChange]:
    """The query rows whose mask differs between ``before`` and ``after`` (same input, layer, head)."""
    if before.mask.shape != after.mask.shape:
        raise ValueError("Both step results must be for the same input.")
    changes = []
    for row in np.flatnonzero((before.mask != after.mask).any(axis=1)):
        blocked = np.flatnonzero(before.mask[row] & ~after.mask[row])
        opened = np.flatnonzero(~before.mask[row] & after.mask[row])
        changes.append(
            RowChange(
                query=int(row),
                newly_blocked=[int(i) for i in blocked],
                newly_opened=[int(i) for i in opened],
                moved=float(before.weights[row, blocked].sum()),
                before=before.weights[row],
                after=after.weights[row],
                output_shift=float(np.linalg.norm(after.output[row] - before.output[row])),
            )
        )
    return changes


def positional_table(loaded: LoadedModel) -> np.ndarray | None:
    """The model's whole positional table (max_len, D) as float32 (a copy), or None without one."""
    positions = _encoder(loaded).embedding.positions
    if positions is None:
        return None
    return positions(loaded.config.max_len).detach().float().cpu().numpy().copy()
