"""Choosing the device a model runs on."""

from __future__ import annotations

import torch


def available_devices() -> list[str]:
    """Device names that work here, CPU always last."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def device_unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot be used here, or None when it can."""
    if name in ("auto", "cpu") or name in available_devices():
        return None
    if name == "cuda":
        if not torch.backends.cuda.is_built():
            return "this PyTorch build has no CUDA support (a CPU-only wheel is installed)"
        return "no CUDA GPU is visible to PyTorch on this machine"
    if name == "mps":
        return "Apple MPS is only available on Apple-silicon Macs"
    return f"unknown device {name!r}"


def resolve_device(name: str = "auto") -> torch.device:
    """'auto' picks CUDA, then Apple MPS, then CPU; a named device that is missing raises ValueError."""
    name = name.strip().lower()
    if name == "auto":
        return torch.device(available_devices()[0])
    base = name.split(":")[0]
    reason = device_unavailable_reason(base)
    if reason is not None:
        raise ValueError(
            f"Device {name!r} is not available: {reason}. Available devices: {', '.join(available_devices())}."
        )
    return torch.device(name)
