"""Positional encodings: the fixed sinusoids of the paper and a learned table."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


def sinusoidal_encoding(length: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The (length, d_model) float32 matrix PE(pos, 2i) = sin(pos / base^(2i/d_model)),
    PE(pos, 2i+1) = cos(pos / base^(2i/d_model)). An odd ``d_model`` keeps its last sine column.
    """
    if length < 0 or d_model < 1:
        raise ValueError(f"length must be >= 0 and d_model >= 1; got length={length}, d_model={d_model}.")
    if base <= 0:
        raise ValueError(f"base must be positive; got {base}.")
    position = np.arange(length, dtype=np.float64)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # (ceil(D/2),)
    angle = position / np.power(base, two_i / d_model)  # (T, ceil(D/2))
    pe = np.zeros((length, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe.astype(np.float32)


def sinusoidal_halves(length: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The same (length, d_model) sinusoids with the columns regrouped: every sine first, then every
    cosine (Marian's layout, not interleaved). Column j < ceil(D/2) is sin(pos / base^(2j/D));
    column ceil(D/2) + j is cos(pos / base^(2j/D))."""
    pe = sinusoidal_encoding(length, d_model, base)
    return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)


def wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Period in positions of each dimension's sinusoid, (d_model,): 2*pi*base^(2i/d_model)."""
    two_i = (np.arange(d_model) // 2) * 2
    return 2 * math.pi * np.power(float(base), two_i / d_model)


class SinusoidalPositionalEncoding(nn.Module):
    """Fixed sinusoids; forward(T) -> (T, d_model). ``halves``: sines first, then cosines (Marian)."""

    def __init__(self, max_len: int, d_model: int, base: float = 10000.0, halves: bool = False) -> None:
        super().__init__()
        encoding = sinusoidal_halves if halves else sinusoidal_encoding
        table = torch.from_numpy(encoding(max_len, d_model, base))
        # not persistent: it is recomputed from the config, so checkpoints stay small
        self.register_buffer("table", table, persistent=False)

    def forward(self, length: int) -> torch.Tensor:
        return self.table[:length]


class LearnedPositionalEmbedding(nn.Module):
    """A trained (max_len, d_model) table; forward(T) -> (T, d_model)."""

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, length: int) -> torch.Tensor:
        return self.table.weight[:length]
