"""Attention rollout (Abnar & Zuidema, 2020): how much each output position draws on each
input token once the attention of every layer is chained, counting the residual path."""

from __future__ import annotations

import numpy as np


def attention_rollout(attention: np.ndarray, residual: bool = True) -> np.ndarray:
    """attention (L, H, T, T) weights of one input -> (L, T, T): entry [l] is the rollout
    through layers 0..l. Heads are averaged; with ``residual`` each layer's matrix is
    0.5 * (A + I), as in the paper. Every row of the result sums to 1."""
    if attention.ndim != 4 or attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"attention must be (layers, heads, T, T); got shape {attention.shape}.")
    layers, _, t, _ = attention.shape
    joint = np.eye(t, dtype=np.float64)
    out = np.empty((layers, t, t), dtype=np.float32)
    for layer in range(layers):
        a = attention[layer].astype(np.float64).mean(axis=0)  # (T, T)
        if residual:
            a = 0.5 * a + 0.5 * np.eye(t)
        a = a / a.sum(axis=-1, keepdims=True).clip(min=1e-12)
        joint = a @ joint
        out[layer] = joint
    return out
