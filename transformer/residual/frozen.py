"""Norms and pointwise nonlinearities held at their forward-pass values, so a sum of parts goes
through them as a linear map and the parts' images still add up to the real output.

A LayerNorm (or RMSNorm) computes ``norm(x) = g ⊙ C x / σ(x) + b`` with C the centring (the identity
for RMSNorm), g its weight, b its bias and σ a scale per position. With σ taken from the forward
pass, ``p ↦ g ⊙ C p / σ`` is linear: for parts p_i that sum to x, their images sum to norm(x) - b.
Everything is read by calling the norm module itself (its output on x, on x shifted, on zeros),
so the same code serves LayerNorm, the tutorials' std-plus-eps norm and RMSNorm.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class FrozenNorm:
    """``apply(parts)`` = g ⊙ C parts / σ for parts (..., T, D); ``bias`` (D,) what the norm adds to any input."""

    weight: torch.Tensor  # (D,)
    bias: torch.Tensor  # (D,)
    scale: torch.Tensor  # (T, 1): σ of each position, from the forward pass
    centres: bool

    def apply(self, parts: torch.Tensor) -> torch.Tensor:
        centred = parts - parts.mean(-1, keepdim=True) if self.centres else parts
        return self.weight * centred / self.scale


def freeze_norm(norm: nn.Module, x: torch.Tensor) -> FrozenNorm:
    """The norm ``norm`` at the inputs x (T, D) of one forward pass, as a linear map plus a bias."""
    d = x.shape[-1]
    if isinstance(norm, nn.Identity):
        one = x.new_ones(d)
        return FrozenNorm(one, x.new_zeros(d), x.new_ones(x.shape[0], 1), False)
    bias = norm(torch.zeros_like(x[:1]))[0]  # 0 normalises to 0 (std 0 plus eps), so this is b
    weight = getattr(norm, "weight", None)
    weight = x.new_ones(d) if weight is None else weight.detach().to(x.dtype)
    out = norm(x) - bias  # g ⊙ C x / σ
    shift = x.abs().amax().clamp(min=1.0)
    centres = bool(torch.allclose(norm(x + shift) - bias, out, atol=1e-4 * out.abs().amax().clamp(min=1.0).item()))
    centred = x - x.mean(-1, keepdim=True) if centres else x
    u = weight * centred  # (T, D); out = u / σ, σ by least squares over the D components
    scale = (u * u).sum(-1, keepdim=True) / (out * u).sum(-1, keepdim=True).clamp(min=1e-30)
    return FrozenNorm(weight, bias, scale, centres)


def frozen_gate(activation, z: torch.Tensor) -> torch.Tensor:
    """act(z) / z elementwise (0 where z is 0): with this gate held, act(Σ z_i) = Σ gate ⊙ z_i exactly."""
    safe = torch.where(z == 0, torch.ones_like(z), z)
    return torch.where(z == 0, torch.zeros_like(z), activation(z) / safe)
