"""The bundled-model format (DESIGN.md): a folder with config.json, model.safetensors, vocab.txt
and, for trained models, metrics.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .config import ModelConfig
from .model import build_model
from .tokenizer import Vocab

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
TARGET_VOCAB_FILE = "target_vocab.txt"
METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class LoadedModel:
    """A model ready for inference with what is needed to feed it text."""

    model: nn.Module
    config: ModelConfig
    vocab: Vocab
    target_vocab: Vocab | None = None
    name: str = ""
    format: str = "attention-lab"
    metrics: dict | None = None
    notes: tuple[str, ...] = ()


def save_bundle(
    folder: str | Path,
    model: nn.Module,
    config: ModelConfig,
    vocab: Vocab,
    metrics: dict | None = None,
    target_vocab: Vocab | None = None,
) -> Path:
    """Write the model as a bundled-model folder; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config.save(folder / CONFIG_FILE)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(_untie(state), str(folder / WEIGHTS_FILE))
    vocab.save(folder / VOCAB_FILE)
    if target_vocab is not None:
        target_vocab.save(folder / TARGET_VOCAB_FILE)
    if metrics is not None:
        (folder / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return folder


def _untie(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """safetensors refuses tensors that share memory: give tied weights their own copy."""
    seen: set[int] = set()
    out = {}
    for key, tensor in state.items():
        ptr = tensor.data_ptr()
        out[key] = tensor.clone() if ptr in seen else tensor
        seen.add(ptr)
    return out


def load_bundle(folder: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Read a bundled-model folder onto ``device`` in eval mode; raises FileNotFoundError /
    ValueError with what is wrong."""
    folder = Path(folder)
    missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE) if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a bundled model: missing {', '.join(missing)}.")
    config = ModelConfig.load(folder / CONFIG_FILE)
    vocab = Vocab.load(folder / VOCAB_FILE)
    model = build_model(config)
    state = load_file(str(folder / WEIGHTS_FILE))
    result = model.load_state_dict(state, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise ValueError(
            f"Weights in {folder} do not fit the config: missing {result.missing_keys[:5]}, "
            f"unexpected {result.unexpected_keys[:5]}."
        )
    target_path = folder / TARGET_VOCAB_FILE
    target_vocab = Vocab.load(target_path) if target_path.is_file() else None
    metrics_path = folder / METRICS_FILE
    metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else None
    if len(vocab) != config.vocab_size:
        raise ValueError(f"{VOCAB_FILE} has {len(vocab)} tokens but the config says vocab_size={config.vocab_size}.")
    model = model.to(device).eval()
    return LoadedModel(model, config, vocab, target_vocab, folder.name, "attention-lab", metrics)
