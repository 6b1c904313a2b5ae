"""Read a Hugging Face model folder without trusting it: ``config.json``, the weights
(``model.safetensors``, ``pytorch_model.bin``, or shards listed in their ``*.index.json``) and their sizes.

Nothing is built here. Sizes are checked on disk first (a 2 GB file is refused by its size, unread);
safetensors shapes come from the file headers (no tensor read); the tensors themselves are read by
the checkpoint package's isolated reader (a child process with time and memory limits, pickles only
through ``torch.load(weights_only=True)``). Every refusal is a :class:`CheckpointError` naming the
file and what to do; the refusals a user meets are :class:`CodedError` s, whose code the app translates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file

from ..bundle import read_safetensors_header
from ..checkpoints.errors import CheckpointError, CodedError
from ..checkpoints.isolation import MEMORY_LIMIT_MB, TIME_LIMIT_S, read_checkpoint_isolated

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
BIN_FILE = "pytorch_model.bin"
INDEX_SUFFIX = ".index.json"
# 200M float32 parameters (the app's cap) take 800 MB: bert-base 440 MB, gpt2 550 MB fit
MAX_WEIGHTS_MB = 1024
MAX_JSON_BYTES = 16 * 1024**2  # a config is a few kB, a shard index a few hundred kB
DOWNLOAD_HINT = "download the model again (all its files) or open a folder saved with save_pretrained()"


@dataclass(frozen=True)
class WeightFiles:
    """The weight files of a folder: one file or its shards, and the index that listed them (if any)."""

    paths: tuple[Path, ...]
    index: Path | None = None

    @property
    def safetensors(self) -> bool:
        return self.paths[0].suffix == ".safetensors"

    @property
    def names(self) -> str:
        listed = ", ".join(p.name for p in self.paths[:3])
        return listed + (f" (+{len(self.paths) - 3} more)" if len(self.paths) > 3 else "")


def read_json(path: Path, what: str = DOWNLOAD_HINT) -> dict:
    """A small JSON object; CheckpointError naming the file when it is missing, too big or not an object."""
    if not path.is_file():
        raise CodedError(
            "missing_file", f"{path.parent.name} has no {path.name}: {what}.", name=path.parent.name, file=path.name
        )
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        message = f"{path.name} is {size:,} bytes; a file like it is a few kB (limit {MAX_JSON_BYTES:,})."
        raise CodedError("json_too_big", message, file=path.name, size=f"{size:,}", limit=f"{MAX_JSON_BYTES:,}")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as err:
        message = f"{path.name} is not valid JSON ({type(err).__name__}): {what}."
        raise CodedError("not_json", message, file=path.name) from err
    if not isinstance(data, dict):
        message = f"{path.name} holds a JSON {type(data).__name__}, not an object of settings: {what}."
        raise CodedError("not_json", message, file=path.name)
    return data


def is_hf_folder(path: str | Path) -> bool:
    """True for a folder whose ``config.json`` names a ``model_type`` (our own bundles never do)."""
    config = Path(path) / CONFIG_FILE
    if not config.is_file() or config.stat().st_size > MAX_JSON_BYTES:
        return False
    try:
        return "model_type" in json.loads(config.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError, TypeError):
        return False


def read_hf_config(folder: Path) -> dict:
    """``config.json`` as a dict that has a ``model_type``."""
    if not (folder / CONFIG_FILE).is_file():
        message = f"{folder.name} has no {CONFIG_FILE}: {DOWNLOAD_HINT}."
        raise CodedError("no_config", message, name=folder.name)
    config = read_json(folder / CONFIG_FILE)
    if not isinstance(config.get("model_type"), str):
        message = f"{CONFIG_FILE} has no model_type: it is not a Hugging Face model config ({DOWNLOAD_HINT})."
        raise CodedError("no_model_type", message, file=CONFIG_FILE)
    return config


def weight_files(folder: Path) -> WeightFiles:
    """The folder's weights, safetensors preferred: one file, else the shards its index lists."""
    for name in (SAFETENSORS_FILE, BIN_FILE):
        if (folder / name).is_file():
            return WeightFiles((folder / name,))
        index = folder / (name + INDEX_SUFFIX)
        if index.is_file():
            return WeightFiles(_shards(index), index)
    message = (
        f"{folder.name} has no weights: expected {SAFETENSORS_FILE} or {BIN_FILE} (or their sharded "
        f"*{INDEX_SUFFIX}) beside {CONFIG_FILE}; {DOWNLOAD_HINT}."
    )
    raise CodedError("no_weights", message, name=folder.name)


def _shards(index: Path) -> tuple[Path, ...]:
    """The shard files an index's ``weight_map`` names, each present in the folder."""
    weight_map = read_json(index).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        message = f"{index.name} has no weight_map of tensor names to shard files: {DOWNLOAD_HINT}."
        raise CodedError("bad_index", message, file=index.name)
    names = sorted({str(v) for v in weight_map.values()})
    bad = [n for n in names if Path(n).name != n or n in (".", "..")]
    if bad:
        message = f"{index.name} names shards outside the folder ({bad[0]!r}): it cannot be opened."
        raise CodedError("bad_index", message, file=index.name)
    missing = [n for n in names if not (index.parent / n).is_file()]
    if missing:
        listed = ", ".join(missing[:3]) + (f" (+{len(missing) - 3} more)" if len(missing) > 3 else "")
        message = (
            f"{index.name} lists {len(names)} shards but {listed} {'is' if len(missing) == 1 else 'are'} missing "
            f"from {index.parent.name}: {DOWNLOAD_HINT}."
        )
        raise CodedError("missing_shard", message, file=index.name, missing=listed, shards=len(names))
    return tuple(index.parent / n for n in names)


def check_sizes(files: WeightFiles, max_mb: float = MAX_WEIGHTS_MB) -> int:
    """Total bytes of the weights; CheckpointError naming the file when one (or all together) is over
    ``max_mb`` or a file is empty. Read from the file system only: nothing is opened."""
    total = 0
    for path in files.paths:
        size = path.stat().st_size
        if size == 0:
            message = f"{path.name} is empty (0 bytes): the download or the save did not finish."
            raise CodedError("empty_file", message, file=path.name)
        if size > max_mb * 1024**2:
            raise _too_big(path.name, size, max_mb)
        total += size
    if total > max_mb * 1024**2:
        raise _too_big(files.names, total, max_mb)
    return total


def _too_big(names: str, size: int, max_mb: float) -> CodedError:
    mb, limit = f"{size / 1024**2:,.0f}", f"{max_mb:,.0f}"
    message = (
        f"{names} is {mb} MB; this app opens models up to {limit} MB of weights (about 200M parameters, e.g. "
        "bert-base or gpt2). Choose a smaller model."
    )
    return CodedError("too_big", message, file=names, mb=mb, limit=limit)


def header_shapes(files: WeightFiles) -> dict[str, tuple[int, ...]] | None:
    """Tensor name -> shape from the safetensors headers (None for ``pytorch_model.bin``, whose shapes
    are known only once it is read)."""
    if not files.safetensors:
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for path in files.paths:
        try:
            header = read_safetensors_header(path)
        except ValueError as err:
            raise CheckpointError(f"{err} ({DOWNLOAD_HINT})") from err
        _merge(shapes, header, path)
    return shapes


BUNDLED_MODELS = Path(__file__).resolve().parent.parent.parent / "assets" / "models"


def is_bundled(path: Path) -> bool:
    """A file shipped with the app under assets/models (ours, not a user's upload)."""
    return path.resolve().is_relative_to(BUNDLED_MODELS)


def read_weights(files: WeightFiles, max_mb: float = MAX_WEIGHTS_MB) -> dict[str, torch.Tensor]:
    """Every tensor of every file, read in the isolated reader; float tensors as float32. A safetensors file
    shipped with the app is read in this process: it is ours, and the isolated reader's wall-clock limit
    must not fail a classroom demo on a busy server."""
    state: dict[str, torch.Tensor] = {}
    for path in files.paths:
        if path.suffix == ".safetensors" and is_bundled(path):
            tensors = load_file(str(path))
            _merge(state, {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}, path)
            continue
        size_mb = path.stat().st_size / 1024**2
        # the child holds the tensors and their serialised copy on the way back
        limits = {"memory_limit_mb": max(MEMORY_LIMIT_MB, 4 * size_mb), "time_limit_s": max(TIME_LIMIT_S, size_mb / 10)}
        raw = read_checkpoint_isolated(path, max_mb, **limits)
        _merge(state, raw.state, path)
    return state


def _merge(into: dict, part: dict, path: Path) -> None:
    twice = sorted(set(into) & set(part))
    if twice:
        raise CheckpointError(f"{path.name} repeats {twice[0]}, which another shard holds already: {DOWNLOAD_HINT}.")
    into.update(part)
