"""Load any supported model: a bundled-model folder or .zip, or a foreign checkpoint file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from .bundle import LoadedModel, load_bundle


@dataclass(frozen=True)
class ImportOptions:
    """What a foreign checkpoint cannot say about itself (None: infer or use a default)."""

    vocab_path: str | None = None
    num_heads: int | None = None
    pooling: str | None = None
    target_vocab_path: str | None = None
    # more answers a foreign checkpoint may need (None: what the checkpoint stores, else the family's default)
    label_names: tuple[str, ...] | None = None
    scale_embedding: bool | None = None
    pad_id: int | None = None
    mask_fill: float | None = None
    norm_first: bool | None = None
    activation: str | None = None
    max_len: int | None = None


def load_model(
    path: str | Path, device: str | torch.device = "cpu", options: ImportOptions | None = None
) -> LoadedModel:
    """A bundled-model folder, or (through the checkpoint importers) a checkpoint file."""
    path = Path(path)
    if path.is_dir():
        return load_bundle(path, device)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder.")
    from .checkpoints import import_checkpoint

    return import_checkpoint(path, device, options or ImportOptions())
