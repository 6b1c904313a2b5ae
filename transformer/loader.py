"""Load any supported model: a bundled-model folder or .zip, or a foreign checkpoint file.

Imports run one way: this module uses :mod:`transformer.checkpoints`, which never imports it.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .bundle import load_bundle
from .checkpoints import import_checkpoint
from .checkpoints.options import ImportOptions
from .core.loaded import LoadedModel
from .hf import is_hf_folder, load_hf_folder
from .hf.gguf_import import gguf_files, is_gguf, load_gguf, load_gguf_folder

__all__ = ["ImportOptions", "load_model"]


def load_model(
    path: str | Path, device: str | torch.device = "cpu", options: ImportOptions | None = None
) -> LoadedModel:
    """A bundled-model folder, a Hugging Face model folder, a GGUF file (or a folder holding one), or (through the
    checkpoint importers) a checkpoint file."""
    path = Path(path)
    if path.is_file() and is_gguf(path):  # llama.cpp / Ollama / LM Studio: the file's own metadata says everything
        return load_gguf(path, device)
    if path.is_dir() and gguf_files(path):  # a bundled GGUF model: its file, licence, metrics
        return load_gguf_folder(path, device)
    if path.is_dir() and is_hf_folder(path):  # config.json with a model_type: a Hugging Face folder
        return load_hf_folder(path, device)
    if path.is_dir():
        return load_bundle(path, device)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder.")
    return import_checkpoint(path, device, options or ImportOptions())
