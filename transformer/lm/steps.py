"""One head of the language model, stage by stage: its masked self-attention computed from the model's
own weights, as the Masks page steps through an encoder's or a decoder's head."""

from __future__ import annotations

import torch

from ..analysis.stepper import HeadSteps, head_stages
from ..core.loaded import LoadedModel
from ..core.masks import layer_look_ahead_mask


@torch.no_grad()
def lm_head_steps(loaded: LoadedModel, ids: torch.Tensor, layer: int, head: int) -> HeadSteps:
    """Head ``head`` of layer ``layer`` of a decoder-only model for ``ids`` (1, T): QKᵀ, ÷√d_k, the
    look-ahead mask (query t sees keys 0..t; in a local layer the last ``local_window``), softmax, × V. Earlier layers run as the model runs them;
    the weights equal what its forward returns for that head."""
    model, cfg = loaded.model, loaded.config
    if ids.dim() != 2 or ids.shape[0] != 1 or not 1 <= ids.shape[1] <= cfg.max_len:
        raise ValueError(f"ids must have shape (1, T) with 1 <= T <= {cfg.max_len}; got {tuple(ids.shape)}.")
    if not 0 <= layer < cfg.num_layers or not 0 <= head < cfg.num_heads:
        raise ValueError(f"layer must be in 0 .. {cfg.num_layers - 1} and head in 0 .. {cfg.num_heads - 1}.")
    ids = ids.to(next(model.parameters()).device)
    x, _ = model.embedding(ids)
    for i, block in enumerate(model.layers[:layer]):
        x, _ = block(x, layer_look_ahead_mask(cfg, i, ids.shape[1], ids.device))
    block = model.layers[layer]
    h = block.attn_block.norm(x) if cfg.norm_first else x  # what the attention sees in a pre-norm layer
    mask = layer_look_ahead_mask(cfg, layer, ids.shape[1], ids.device)  # (T, T) True = may attend
    return head_stages(block.self_attn, h, layer, head, mask, float(cfg.mask_fill))
