"""Read an uploaded checkpoint file without running any code from it.

``torch.save`` files go through ``torch.load(weights_only=True)``, PyTorch's restricted
unpickler, which only rebuilds tensors and plain containers and refuses anything else (a
pickle that would call ``os.system`` is stopped before the call). ``.safetensors`` files hold
no code at all. Sizes are checked before and after reading.
"""

from __future__ import annotations

import pickle
import re
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from ..bundle import MAX_TENSORS, read_safetensors_header
from .errors import CheckpointError, CodedError

MAX_FILE_MB = 200  # the same limit as server.maxUploadSize in .streamlit/config.toml
MAX_PARAMETERS = 200_000_000
MAX_VOCAB = 1_000_000
STATE_KEYS = ("model_state_dict", "state_dict", "model", "model_state", "net")
VOCAB_KEYS = ("itos", "vocab", "vocab_itos", "src_itos", "source_itos", "src_vocab", "stoi")
TARGET_VOCAB_KEYS = ("tgt_itos", "trg_itos", "target_itos", "tgt_vocab", "trg_vocab", "target_vocab")
CONFIG_KEYS = ("config", "args", "hparams", "hyperparameters", "hyper_parameters", "model_config")
RAW_FIELDS = ("name", "state", "source", "hints", "itos", "target_itos")  # RawCheckpoint's, as plain data
SAVE_HINT = "Save the weights with torch.save(model.state_dict(), 'model.pt') or as .safetensors."


@dataclass(frozen=True)
class RawCheckpoint:
    """What a file held: ``state`` float32 tensors on the CPU by name; ``hints`` plain values
    saved beside them (e.g. num_heads, label names, a config dict); vocabulary lists if any."""

    name: str
    state: dict[str, torch.Tensor]
    source: str  # "safetensors" | "torch.save"
    hints: dict[str, object] = field(default_factory=dict)
    itos: list[str] | None = None
    target_itos: list[str] | None = None

    @property
    def num_parameters(self) -> int:
        return sum(t.numel() for t in self.state.values())


def read_checkpoint(path: str | Path, max_mb: float = MAX_FILE_MB) -> RawCheckpoint:
    """Read a ``.safetensors`` file or a ``torch.save`` file holding a state_dict (or a dict
    holding one under a usual key). Raises :class:`CheckpointError` with what was wrong."""
    path = Path(path)
    size = check_file_size(path, max_mb)
    with open(path, "rb") as f:
        head = f.read(16)
    if path.suffix.lower() == ".safetensors" or _looks_like_safetensors(head, size):
        return _read_safetensors(path)
    return _read_torch(path, head)


def read_checkpoint_plain(path: str, max_mb: float = MAX_FILE_MB) -> dict:
    """:func:`read_checkpoint`'s result as a plain dict (what torch.load(weights_only=True) takes): what
    a child process of the isolated reader sends back; ``RawCheckpoint(**plain)`` rebuilds it."""
    raw = read_checkpoint(path, max_mb)
    return {name: getattr(raw, name) for name in RAW_FIELDS}


def check_file_size(path: Path, max_mb: float) -> int:
    """The file's size in bytes; raises when it is missing, empty or larger than ``max_mb``."""
    if path.is_dir():
        raise CheckpointError(f"{path.name} is a folder: give the file itself (e.g. vocab.txt or model.pt).")
    if not path.is_file():
        raise CheckpointError(f"{path.name}: no such file.")
    size = path.stat().st_size
    if size == 0:
        raise CheckpointError(f"{path.name} is empty (0 bytes): the upload or the save did not finish. {SAVE_HINT}")
    if size > max_mb * 1024**2:
        raise CheckpointError(
            f"{path.name} is {size / 1024**2:.0f} MB; the limit is {max_mb:.0f} MB. "
            "Models this app can show are much smaller: check that you saved the right file."
        )
    return size


def _looks_like_safetensors(head: bytes, size: int) -> bool:
    """safetensors: an 8-byte little-endian header length, then a JSON header."""
    if len(head) < 10:
        return False
    length = int.from_bytes(head[:8], "little")
    return 0 < length < size and head[8:9] == b"{"


def _read_safetensors(path: Path) -> RawCheckpoint:
    try:
        read_safetensors_header(path)  # size and tensor count checked before the header is parsed
    except ValueError as err:
        raise CheckpointError(f"{err} {SAVE_HINT}") from err
    try:
        with safe_open(str(path), framework="pt") as f:
            shapes = {key: f.get_slice(key).get_shape() for key in f.keys()}
            _check_parameter_count(path.name, sum(_numel(s) for s in shapes.values()))
            state = {key: f.get_tensor(key) for key in f.keys()}
            metadata = f.metadata() or {}
    except SafetensorError as err:
        raise CheckpointError(
            f"{path.name} is not a valid safetensors file ({err}); it may be truncated or corrupt. {SAVE_HINT}"
        ) from err
    if not state:
        raise CheckpointError(f"{path.name} holds no tensors.")
    hints = _hints_from_metadata(metadata)
    return RawCheckpoint(path.name, _as_float_state(state), "safetensors", hints)


def _numel(shape) -> int:
    n = 1
    for dim in shape:
        n *= int(dim)
    return n


def _hints_from_metadata(metadata: dict[str, str]) -> dict[str, object]:
    """safetensors metadata is str -> str; a JSON 'config' entry is read as a dict."""
    import json

    hints: dict[str, object] = {}
    for key, value in metadata.items():
        try:
            hints[key] = json.loads(value)
        except ValueError:
            hints[key] = value
    return _flatten_config(hints)


def _stored_tensor_count(path: Path) -> int | None:
    """How many tensor storages a ``torch.save`` zip holds (its ``<name>/data/<n>`` entries), read from
    the zip's directory without unpickling anything; None for other files (the legacy format).
    Raises CheckpointError when the entries declare more bytes than the file holds (torch.save
    stores them uncompressed: a compressed entry would be inflated to its declared size)."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = [i for i in archive.infolist() if "/data/" in i.filename and not i.filename.endswith("/")]
    except (zipfile.BadZipFile, OSError):
        return None
    declared, size = sum(i.file_size for i in entries), path.stat().st_size
    if declared > size + 1024**2:
        raise CheckpointError(
            f"{path.name} declares {declared / 1e6:,.0f} MB of tensor data inside a {size / 1e6:,.1f} MB file "
            f"(compressed entries, which torch.save never writes). {SAVE_HINT}"
        )
    return len(entries)


def _check_tensor_count(name: str, count: int | None) -> None:
    if count is not None and count > MAX_TENSORS:
        raise CheckpointError(
            f"{name} holds {count:,} tensors; the limit is {MAX_TENSORS:,} (a Transformer has a few hundred)."
        )


def _read_torch(path: Path, head: bytes) -> RawCheckpoint:
    _check_tensor_count(path.name, _stored_tensor_count(path))  # before unpickling anything
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # protocol notes from the restricted unpickler
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if "GLOBAL" in str(err) or head[:1] == b"\x80" or head.startswith(b"PK"):
            raise CodedError("pickle_refused", _refusal_message(path.name, str(err)), file=path.name) from err
        raise CheckpointError(_unreadable_message(path.name, head, err)) from err  # text or other bytes
    except Exception as err:  # torch raises EOFError, OSError, RuntimeError, KeyError… for bad bytes
        raise CheckpointError(_unreadable_message(path.name, head, err)) from err
    state, rest = _find_state(obj, path.name)
    _check_tensor_count(path.name, len(state))
    check_stored_sizes(path.name, state)  # before any tensor is copied or converted
    _check_parameter_count(path.name, sum(t.numel() for t in state.values()))
    hints = _flatten_config({k: v for k, v in rest.items() if k not in VOCAB_KEYS + TARGET_VOCAB_KEYS})
    itos = _first_vocab(rest, VOCAB_KEYS, path.name)
    target_itos = _first_vocab(rest, TARGET_VOCAB_KEYS, path.name)
    return RawCheckpoint(path.name, _as_float_state(state), "torch.save", hints, itos, target_itos)


def _refusal_message(name: str, detail: str) -> str:
    found = re.search(r"GLOBAL ([\w.]+)", detail)
    what = f" (it asks for `{found.group(1)}`)" if found else ""
    return (
        f"Refused {name}: it is a pickle that would run code or build Python objects other than tensors when "
        f"loaded{what}, so it was not opened and nothing in it ran. A whole model saved with torch.save(model), "
        "or a torchtext vocabulary object, looks like this too. Save model.state_dict() instead, with the "
        "vocabulary as a list of strings (vocab.get_itos()) if you want it inside the file."
    )


def _unreadable_message(name: str, head: bytes, err: Exception) -> str:
    if head.startswith(b"PK"):
        what = "a zip archive that is truncated or corrupt (the upload may have been cut off)"
    elif head[:1] == b"\x80":
        what = "a pickle that is truncated or corrupt"
    else:
        what = f"not a PyTorch checkpoint (it starts with {head[:8]!r})"
    return f"Could not read {name}: it is {what} [{type(err).__name__}]. {SAVE_HINT}"


def _find_state(obj: object, name: str) -> tuple[dict[str, torch.Tensor], dict[str, object]]:
    """The state_dict inside what torch.load returned, and the other entries beside it."""
    if not isinstance(obj, Mapping):
        raise CheckpointError(
            f"{name} holds a {type(obj).__name__}, not a state_dict (a dict of tensor names to tensors). {SAVE_HINT}"
        )
    tensors = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if tensors and len(tensors) >= len(obj) / 2:
        return _strip_module_prefix(tensors), {k: v for k, v in obj.items() if k not in tensors}
    for key in STATE_KEYS:
        inner = obj.get(key)
        if isinstance(inner, Mapping) and any(isinstance(v, torch.Tensor) for v in inner.values()):
            state = {k: v for k, v in inner.items() if isinstance(v, torch.Tensor)}
            return _strip_module_prefix(state), {k: v for k, v in obj.items() if k != key}
    raise CheckpointError(
        f"{name} holds a dict with keys {sorted(map(str, obj))[:10]} but no state_dict: expected tensors, or a "
        f"dict of tensors under one of {', '.join(STATE_KEYS)}."
    )


def _strip_module_prefix(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """nn.DataParallel saves every name with 'module.' in front; the architecture is the same."""
    if state and all(str(k).startswith("module.") for k in state):
        return {str(k)[len("module.") :]: v for k, v in state.items()}
    return {str(k): v for k, v in state.items()}


def check_stored_sizes(name: str, state: Mapping[str, torch.Tensor]) -> None:
    """Every tensor must be stored in the file: its shape's elements must fit in the bytes its
    storage holds. A view with stride 0 (or overlapping strides) claims a shape far larger than
    what was saved: converting or copying it would allocate the whole claimed size (a 1.7 kB file
    claiming 14,000 × 14,000 half floats becomes 784 MB as float32). Raises CheckpointError."""
    for key, tensor in state.items():
        claimed = tensor.numel() * tensor.element_size()
        stored = tensor.untyped_storage().nbytes()
        if claimed > stored:
            shape = " × ".join(f"{n:,}" for n in tensor.shape)
            raise CheckpointError(
                f"{name}: {key} claims {shape} {tensor.dtype} values ({claimed / 1e6:,.0f} MB) but the file stores "
                f"{stored:,} bytes for it (a view that repeats the same values). {SAVE_HINT}"
            )


def _check_parameter_count(name: str, count: int) -> None:
    if count > MAX_PARAMETERS:
        raise CheckpointError(
            f"{name} has {count / 1e6:.0f}M parameters; this app takes at most {MAX_PARAMETERS / 1e6:.0f}M."
        )


def _as_float_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Floating tensors as float32 (half-precision checkpoints too); integer buffers as they are."""
    return {k: (v.float() if v.is_floating_point() else v) for k, v in state.items()}


def _flatten_config(values: Mapping[str, object]) -> dict[str, object]:
    """Top-level plain values, with a nested config/args dict merged in (its values win)."""
    hints = {str(k): v for k, v in values.items() if not isinstance(v, Mapping)}
    for key in CONFIG_KEYS:
        nested = values.get(key)
        if isinstance(nested, Mapping):
            hints.update({str(k): v for k, v in nested.items()})
            hints.setdefault("_config_dict", dict(nested))
    return hints


def _first_vocab(values: Mapping[str, object], keys: tuple[str, ...], name: str) -> list[str] | None:
    """A token list (or {token: id} dict) stored under one of ``keys``, as a list of tokens."""
    for key in keys:
        if key in values:
            return vocab_list(values[key], f"{name}['{key}']")
    return None


def vocab_list(value: object, where: str) -> list[str]:
    """A list of tokens (id = position) from a list or a {token: id} dict; raises with a fix."""
    if isinstance(value, Mapping):
        ids = list(value.values())
        if not all(type(i) is int for i in ids) or sorted(ids) != list(range(len(ids))):
            raise CheckpointError(
                f"{where}: a {{token: id}} vocabulary needs the ids 0 .. {len(value) - 1}, each once."
            )
        itos = [""] * len(value)
        for token, i in value.items():
            itos[i] = token
        value = itos
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise CheckpointError(f"{where} is not a list of token strings; store vocab.get_itos() there.")
    if len(value) > MAX_VOCAB:
        raise CheckpointError(f"{where} has {len(value):,} tokens; the limit is {MAX_VOCAB:,}.")
    return list(value)
