"""Attention and weights of a ViT turned into pictures over the patch grid (numpy only)."""

from __future__ import annotations

import numpy as np

from ..analysis.rollout import attention_rollout


def query_maps(attention: np.ndarray, query: int, grid: int, offset: int) -> np.ndarray:
    """attention (L, H, T, T) of one image -> (L, H, grid, grid): where token ``query`` looks
    among the patches (the class token's own column left out when ``offset`` is 1)."""
    rows = attention[:, :, query, offset:]  # (L, H, P)
    return rows.reshape(*rows.shape[:2], grid, grid)


def mean_maps(attention: np.ndarray, query: int, grid: int, offset: int) -> np.ndarray:
    """(L, grid, grid): the mean over heads of :func:`query_maps`."""
    return query_maps(attention, query, grid, offset).mean(axis=1)


def rollout_maps(attention: np.ndarray, query: int, grid: int, offset: int) -> np.ndarray:
    """(L, grid, grid): attention rollout (heads averaged, residual path counted, rows
    renormalised) from token ``query`` to each patch, through layers 1..l for entry l."""
    rolled = attention_rollout(attention)  # (L, T, T), rows sum to 1
    return rolled[:, query, offset:].reshape(-1, grid, grid)


def position_similarity(positions: np.ndarray) -> np.ndarray:
    """positions (P, D) learned embeddings of the patches -> (P, P) cosine similarity."""
    unit = positions / np.linalg.norm(positions, axis=1, keepdims=True).clip(min=1e-12)
    return unit @ unit.T


def similarity_mosaic(similarity: np.ndarray, grid: int) -> np.ndarray:
    """(P, P) -> one (grid·(grid+1)-1)² picture: the map of patch (r, c)'s similarity to every
    patch, placed at tile (r, c), tiles separated by a NaN gap (as in the ViT paper's figure)."""
    step = grid + 1
    side = grid * step - 1
    out = np.full((side, side), np.nan, dtype=np.float32)
    for index in range(grid * grid):
        r, c = divmod(index, grid)
        out[r * step : r * step + grid, c * step : c * step + grid] = similarity[index].reshape(grid, grid)
    return out


def filter_components(weight: np.ndarray, channels: int, patch: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Principal components of the patch-embedding rows: weight (D, C·p·p) -> components
    (k, C, p, p) and the share of variance each explains (k,)."""
    centred = weight - weight.mean(axis=0, keepdims=True)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    k = min(k, len(s))
    explained = (s**2) / max(float((s**2).sum()), 1e-12)
    return vt[:k].reshape(k, channels, patch, patch), explained[:k]


def patch_index(row: int, col: int, grid: int) -> int:
    """The patch number of grid cell (row, col), 0-based, row by row."""
    if not (0 <= row < grid and 0 <= col < grid):
        raise ValueError(f"Patch ({row}, {col}) is outside the {grid} × {grid} grid.")
    return row * grid + col
