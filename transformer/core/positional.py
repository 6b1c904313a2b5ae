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


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (RoFormer): each pair of a head's first ``rotary_dim`` dimensions is
    rotated by the angle position / base^(2i/rotary_dim), so the score q_m·k_n of a rotated query and
    key depends on the distance m - n alone. ``style`` "halves" pairs dimension i with i + rotary_dim/2
    (Llama, NeoX), "interleaved" pairs 2i with 2i + 1 (GPT-J). Dimensions past ``rotary_dim`` pass as they are.
    Holds no parameters: the frequencies are recomputed from the config."""

    def __init__(self, rotary_dim: int, base: float = 10000.0, style: str = "halves") -> None:
        super().__init__()
        if rotary_dim <= 0 or rotary_dim % 2 or base <= 0:
            raise ValueError(f"rotary needs a positive even dimension and base; got {rotary_dim}, {base}.")
        self.rotary_dim = rotary_dim
        self.style = style
        # the same float32 arithmetic as Hugging Face's Llama, so angles match bit for bit; on the CPU even where
        # the model is built on the meta device (the importers do, then assign the file's weights)
        steps = torch.arange(0, rotary_dim, 2, dtype=torch.int64, device="cpu").float()
        inv_freq = 1.0 / (base ** (steps / rotary_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # (rotary_dim / 2,)

    def angles(self, start: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin), each (length, rotary_dim / 2) float32, for positions start .. start + length - 1."""
        positions = torch.arange(start, start + length, device=self.inv_freq.device).float()
        freqs = positions[:, None] * self.inv_freq[None, :]  # (T, r/2)
        return freqs.cos(), freqs.sin()

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x (B, H, T, d) at positions start .. start + T - 1 -> rotated x, same shape and dtype."""
        cos, sin = (a.to(x.dtype) for a in self.angles(start, x.shape[-2]))
        r = self.rotary_dim
        rot, rest = x[..., :r], x[..., r:]
        if self.style == "interleaved":
            x1, x2 = rot[..., 0::2], rot[..., 1::2]  # (B, H, T, r/2) each
            turned = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2)
        else:
            x1, x2 = rot[..., : r // 2], rot[..., r // 2 :]
            turned = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
        return torch.cat((turned, rest), dim=-1) if rest.shape[-1] else turned
