"""Saving a language-model training as it goes and going on from the saved state (``--resume``).

The state file is our own: the weights, the optimiser's moments, the step, the seconds trained, the
random generators and the induction curve so far. It is written to a temporary name and then renamed,
so a run cut off while saving leaves the previous state whole; it is read back with
``torch.load(weights_only=True)`` (tensors and plain values only, nothing unpickled beyond them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..core.config import ModelConfig
from ..core.decoder import DecoderLM

STATE_FILE = "train_state.pt"
LOSSES_KEPT = 50  # the training loss reported at a probe is the mean of the last 50 steps


@dataclass
class TrainState:
    """Where a training stands: the step reached, the seconds of optimisation so far, the induction
    curve's points, the last training losses, and the steps at which earlier sessions were resumed."""

    step: int = 0
    seconds: float = 0.0
    curve: list[dict] | None = None
    losses: list[float] | None = None
    resumed_at: list[int] | None = None


def state_path(folder: str | Path) -> Path:
    return Path(folder) / STATE_FILE


def save_state(
    folder: str | Path,
    model: DecoderLM,
    optimizer: torch.optim.Optimizer,
    state: TrainState,
    rng: np.random.Generator,
) -> Path:
    """Write ``train_state.pt`` in ``folder`` (created); returns its path."""
    path = state_path(folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "config": json.dumps(model.config.to_dict()),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": state.step,
        "seconds": state.seconds,
        "curve": json.dumps(state.curve or []),
        "losses": list((state.losses or [])[-LOSSES_KEPT:]),
        "resumed_at": list(state.resumed_at or []),
        "numpy_rng": json.dumps(rng.bit_generator.state),
        "torch_rng": torch.get_rng_state(),
    }
    partial = path.with_suffix(".partial")
    torch.save(payload, partial)
    os.replace(partial, path)
    return path


def load_state(folder: str | Path) -> dict:
    """The saved payload of ``folder``'s ``train_state.pt``; FileNotFoundError saying what to do without one."""
    path = state_path(folder)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: there is no training to resume (run without --resume).")
    return torch.load(path, map_location="cpu", weights_only=True)


def restore(
    payload: dict, optimizer_for, rng: np.random.Generator
) -> tuple[DecoderLM, ModelConfig, torch.optim.Optimizer, TrainState]:
    """The model (training mode), its config, the optimiser (``optimizer_for(model)`` given the saved
    moments) and the TrainState of a payload from :func:`load_state`; ``rng`` gets the saved state."""
    config = ModelConfig.from_dict(json.loads(payload["config"]))
    model = DecoderLM(config)
    model.load_state_dict(payload["model"])
    optimizer = optimizer_for(model)
    optimizer.load_state_dict(payload["optimizer"])
    rng.bit_generator.state = json.loads(payload["numpy_rng"])
    torch.set_rng_state(payload["torch_rng"])
    step = int(payload["step"])
    state = TrainState(
        step=step,
        seconds=float(payload["seconds"]),
        curve=json.loads(payload["curve"]),
        losses=[float(x) for x in payload["losses"]],
        resumed_at=[int(x) for x in payload["resumed_at"]] + [step],
    )
    return model.train(), config, optimizer, state
