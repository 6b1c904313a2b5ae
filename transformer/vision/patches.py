"""Cutting images into patches and putting them back.

A patch is flattened in (channel, row, column) order, the order ``nn.Conv2d`` weights have, so
a patch-embedding row reshapes to a (C, p, p) filter. Patches are numbered row by row.
"""

from __future__ import annotations

import torch


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """images (B, C, H, W) -> patches (B, (H/p)·(W/p), C·p·p)."""
    b, c, h, w = images.shape
    p = patch_size
    if h % p or w % p:
        raise ValueError(f"Image size {h}×{w} is not a multiple of the patch size {p}.")
    x = images.reshape(b, c, h // p, p, w // p, p)  # (B, C, gh, p, gw, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, p, p)
    return x.reshape(b, (h // p) * (w // p), c * p * p)


def unpatchify(patches: torch.Tensor, patch_size: int, channels: int, grid: tuple[int, int]) -> torch.Tensor:
    """patches (B, gh·gw, C·p·p) -> images (B, C, gh·p, gw·p); the inverse of :func:`patchify`."""
    b = patches.shape[0]
    gh, gw = grid
    p = patch_size
    x = patches.reshape(b, gh, gw, channels, p, p).permute(0, 3, 1, 4, 2, 5)  # (B, C, gh, p, gw, p)
    return x.reshape(b, channels, gh * p, gw * p)
