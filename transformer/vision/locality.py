"""How local a ViT head is: the mean distance, in patches, from each patch to what it attends to."""

from __future__ import annotations

import numpy as np


def patch_distances(grid: int) -> np.ndarray:
    """(P, P) Euclidean distance in patch units between the patches of a ``grid`` x ``grid`` image, row by row."""
    rows, cols = np.divmod(np.arange(grid * grid), grid)
    return np.hypot(rows[:, None] - rows[None, :], cols[:, None] - cols[None, :])


def mean_patch_distance(weights: np.ndarray, grid: int, class_token: bool) -> np.ndarray:
    """weights (..., T, T) over [CLS] (if present) and the patches -> (...) the attention-weighted mean
    distance from each patch query to the patch keys, the weights renormalised over patch keys."""
    offset = 1 if class_token else 0
    patches = np.asarray(weights, dtype=np.float64)[..., offset:, offset:]  # (..., P, P)
    if patches.shape[-1] != grid * grid:
        raise ValueError(f"Expected {grid * grid} patch tokens, got {patches.shape[-1]}.")
    mass = patches.sum(-1, keepdims=True)
    spread = np.divide(patches, mass, out=np.zeros_like(patches), where=mass > 0)
    return (spread * patch_distances(grid)).sum(-1).mean(-1)


def locality_score(weights: np.ndarray, grid: int, class_token: bool) -> np.ndarray:
    """1 - mean distance / the mean distance of a uniform head (clipped at 0): 1 for a head that
    looks only at its own patch, about 0 for one that looks everywhere alike."""
    uniform = patch_distances(grid).mean()
    return np.clip(1.0 - mean_patch_distance(weights, grid, class_token) / uniform, 0.0, 1.0)
