"""Vision models in the bundled-model folder format (DESIGN.md): config.json with a vision ``kind``,
model.safetensors, metrics.json; no vocabulary."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .config import VISION_KINDS, VisionConfig
from .model import VisionTransformer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class VisionModel:
    """A ViT ready for inference (eval mode), with its config and what is known about it."""

    model: VisionTransformer
    config: VisionConfig
    name: str = ""
    format: str = "attention-lab"
    metrics: dict | None = None
    notes: tuple[str, ...] = ()


def save_vision_bundle(folder: str | Path, model: VisionTransformer, metrics: dict | None = None) -> Path:
    """Write ``model`` as a bundled-model folder; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save(folder / CONFIG_FILE)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / WEIGHTS_FILE))
    if metrics is not None:
        (folder / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return folder


def is_vision_bundle(folder: str | Path) -> bool:
    """True when ``folder`` holds a config.json whose ``kind`` is a vision kind."""
    path = Path(folder) / CONFIG_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("kind") in VISION_KINDS


def load_vision_bundle(folder: str | Path, device: str | torch.device = "cpu") -> VisionModel:
    """Read a vision bundle onto ``device`` in eval mode; raises FileNotFoundError / ValueError."""
    folder = Path(folder)
    missing = [n for n in (CONFIG_FILE, WEIGHTS_FILE) if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a vision model: missing {', '.join(missing)}.")
    config = VisionConfig.load(folder / CONFIG_FILE)
    model = VisionTransformer(config)
    model.load_state_dict(load_file(str(folder / WEIGHTS_FILE)))
    metrics_path = folder / METRICS_FILE
    metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else None
    return VisionModel(model.to(device).eval(), config, folder.name, "attention-lab", metrics)
