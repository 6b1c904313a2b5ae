"""Switching attention heads off: the prediction with a given (L, H) gate mask, and which single
heads (and whole layers) change this sentence's prediction most.

A gate of 0 removes that head's output before the layer's output projection; a layer with all
gates at 0 adds exactly nothing to its residual stream (see ``MultiHeadAttention.forward``).
The shared model is never changed: the gates are an input of the forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

# Elements of activations (and their gradients) one batched forward may hold; bigger jobs are chunked.
ELEMENT_BUDGET = 60_000_000


def chunk_rows(model: nn.Module, length: int, rows_per_item: int = 1) -> int:
    """How many inputs of ``length`` tokens one forward-and-backward may take within ELEMENT_BUDGET.
    Per input: each layer's scores, weights and their gradients (H·T·T each) plus position-wise activations."""
    cfg = model.config
    per_input = max(1, cfg.num_layers) * (4 * cfg.num_heads * length * length + length * (cfg.d_ff + 8 * cfg.d_model))
    return max(1, ELEMENT_BUDGET // (per_input * rows_per_item))


def head_mask(num_layers: int, num_heads: int, heads_off=(), layers_off=()) -> torch.Tensor:
    """(L, H) float gates, 1 = on: 0 at each (layer, head) in ``heads_off`` and every head of each
    layer in ``layers_off`` (0-based indices). Raises ValueError for an index outside the model."""
    mask = torch.ones(num_layers, num_heads)
    for layer, head in heads_off:
        if not (0 <= layer < num_layers and 0 <= head < num_heads):
            raise ValueError(f"No head {head} in layer {layer}: the model has {num_layers} × {num_heads} heads.")
        mask[layer, head] = 0.0
    for layer in layers_off:
        if not 0 <= layer < num_layers:
            raise ValueError(f"No layer {layer}: the model has {num_layers} layers.")
        mask[layer] = 0.0
    return mask


@torch.inference_mode()
def masked_probabilities(model: nn.Module, ids: torch.Tensor, masks: torch.Tensor) -> np.ndarray:
    """ids (1, T) one input; masks (L, H) or (V, L, H) gate sets -> (V, labels) probabilities,
    one row per gate set, run as batches of variants of the same input."""
    if model.training:
        raise ValueError("Head switch-off needs a model in eval mode (call model.eval() once after loading).")
    masks = masks.to(ids.device)
    masks = masks.unsqueeze(0) if masks.dim() == 2 else masks
    expected = (model.config.num_layers, model.config.num_heads)
    if tuple(masks.shape[1:]) != expected:
        raise ValueError(f"A head mask must be (layers, heads) = {expected}; got {tuple(masks.shape[1:])}.")
    per_chunk = chunk_rows(model, ids.shape[1])
    out = []
    for start in range(0, masks.shape[0], per_chunk):
        chunk = masks[start : start + per_chunk]
        logits = model(ids.expand(chunk.shape[0], -1), head_mask=chunk).logits
        out.append(model.probabilities(logits).float().cpu())
    return torch.cat(out).numpy()


@dataclass(frozen=True)
class HeadEffects:
    """p(target) for one sentence: ``base`` with every head on, ``heads`` (L, H) with that one head
    off, ``layers`` (L,) with the whole layer's attention off."""

    target: int
    base: float
    heads: np.ndarray
    layers: np.ndarray

    def ranking(self, label: str = "") -> list[dict]:
        """Single heads and whole layers, largest |change| of p(target) first (1-based numbers)."""
        name = f"p({label})" if label else "probability"
        rows = [
            {
                "switched off": f"layer {layer + 1}, head {head + 1}",
                "layer": layer + 1,
                "head": head + 1,
                name: float(p),
                "change": float(p - self.base),
            }
            for (layer, head), p in np.ndenumerate(self.heads)
        ]
        rows += [
            {
                "switched off": f"layer {layer + 1}, all heads",
                "layer": layer + 1,
                "head": None,
                name: float(p),
                "change": float(p - self.base),
            }
            for layer, p in enumerate(self.layers)
        ]
        return sorted(rows, key=lambda r: -abs(r["change"]))


def head_effects(model: nn.Module, ids: torch.Tensor, target: int) -> HeadEffects:
    """Switch each head off alone, then each layer, for input ids (1, T); the 1 + L·H + L gate
    sets run together (chunked only when they would not fit ELEMENT_BUDGET)."""
    layers, heads = model.config.num_layers, model.config.num_heads
    variants = [head_mask(layers, heads)]
    variants += [head_mask(layers, heads, heads_off=[(lay, h)]) for lay in range(layers) for h in range(heads)]
    variants += [head_mask(layers, heads, layers_off=[lay]) for lay in range(layers)]
    probs = masked_probabilities(model, ids, torch.stack(variants))[:, target]  # (1 + L·H + L,)
    return HeadEffects(
        target, float(probs[0]), probs[1 : 1 + layers * heads].reshape(layers, heads), probs[1 + layers * heads :]
    )
