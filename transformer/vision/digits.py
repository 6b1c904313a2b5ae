"""scikit-learn's handwritten digits (1,797 images, 8×8, shipped inside the wheel), upsampled to 32×32.

The split is seeded and stratified: 60 % train, 20 % validation, 20 % test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

IMAGE_SIZE = 32
LABELS = tuple(str(d) for d in range(10))


@dataclass(frozen=True)
class DigitSplits:
    """Images (N, 1, 32, 32) float32 in [0, 1] and labels (N,) int64 per split."""

    train: tuple[np.ndarray, np.ndarray]
    val: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]


def upsample(images8: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """(N, 8, 8) values 0..16 -> (N, 1, size, size) float32 in [0, 1] (bilinear)."""
    x = torch.from_numpy(np.asarray(images8, dtype=np.float32) / 16.0).unsqueeze(1)
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.clamp(0, 1).numpy()


def load_digits_splits(seed: int = 0) -> DigitSplits:
    """The seeded stratified split of the upsampled digits."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    images, labels = upsample(data.images), data.target.astype(np.int64)
    idx = np.arange(len(labels))
    rest, test = train_test_split(idx, test_size=0.2, random_state=seed, stratify=labels)
    train, val = train_test_split(rest, test_size=0.25, random_state=seed, stratify=labels[rest])
    pick = lambda ids: (images[ids], labels[ids])  # noqa: E731
    return DigitSplits(pick(train), pick(val), pick(test))


def augment(
    images: torch.Tensor, generator: torch.Generator, shift: float = 3.0, degrees: float = 12.0, zoom: float = 0.1
) -> torch.Tensor:
    """Random small affine warps of (B, C, H, W): shift up to ``shift`` pixels, rotate up to
    ``degrees``, scale by 1 ± ``zoom``; the same handwriting, placed a little differently."""
    b, _, h, _ = images.shape
    rand = lambda: torch.rand(b, generator=generator) * 2 - 1  # noqa: E731
    angle = rand() * degrees * torch.pi / 180
    scale = 1 + rand() * zoom
    tx, ty = rand() * shift * 2 / h, rand() * shift * 2 / h
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1)  # (B, 2, 3)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, align_corners=False, padding_mode="zeros")
