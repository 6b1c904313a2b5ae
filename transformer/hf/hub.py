"""Fetch a model folder from the Hugging Face Hub by name (``--hub bert-base-uncased``) with
``huggingface_hub``: only the files the importer reads, safetensors preferred over
``pytorch_model.bin``, sizes checked against the limit from the repository's file list before any
download, the user's own cache reused (a folder already there is opened without the network).

Offline (no network, or ``HF_HUB_OFFLINE=1``) a cached folder is still opened; a model that is not
cached gets one message saying so and how to import a downloaded folder instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..checkpoints.errors import CodedError
from .folder import BIN_FILE, CONFIG_FILE, INDEX_SUFFIX, MAX_WEIGHTS_MB, SAFETENSORS_FILE

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "*.spm",
    "preprocessor_config.json",
)
SAFETENSORS_FILES = (SAFETENSORS_FILE, "model-*-of-*.safetensors", SAFETENSORS_FILE + INDEX_SUFFIX)
BIN_FILES = (BIN_FILE, "pytorch_model-*-of-*.bin", BIN_FILE + INDEX_SUFFIX)


def offline_message(name: str) -> str:
    return (
        f"No internet connection (or HF_HUB_OFFLINE is set), and {name} is not in the Hugging Face cache. On a "
        f"machine with internet run `huggingface-cli download {name}` (or save_pretrained), copy the folder here, "
        "and open it with --checkpoint path/to/folder (or upload it on the Checkpoints page)."
    )


def is_offline() -> bool:
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    return flag or bool(constants.HF_HUB_OFFLINE)


def download(name: str, cache_dir: str | Path | None = None, max_mb: float = MAX_WEIGHTS_MB) -> Path:
    """The local folder of Hub model ``name`` (e.g. "klue/bert-base"), downloading what is missing."""
    from huggingface_hub import HfApi, snapshot_download

    cached = _cached(name, cache_dir)
    if cached is not None:
        return cached
    if is_offline():
        raise CodedError("hub_offline", offline_message(name), name=name)
    try:
        info = HfApi().model_info(name, files_metadata=True)
    except Exception as err:  # noqa: BLE001 - httpx, hub and OS errors all mean "cannot ask the Hub"
        raise _hub_error(name, err) from err
    sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
    patterns = chosen_files(list(sizes))
    weights_mb = sum(size for file, size in sizes.items() if _matches(file, patterns) and _is_weight(file)) / 1024**2
    if weights_mb > max_mb:
        mb, limit = f"{weights_mb:,.0f}", f"{max_mb:,.0f}"
        message = (
            f"{name}'s weights are {mb} MB; this app opens models up to {limit} MB "
            "(about 200M parameters, e.g. bert-base or gpt2). Choose a smaller model."
        )
        raise CodedError("too_big", message, file=name, mb=mb, limit=limit)
    try:
        return Path(snapshot_download(name, allow_patterns=patterns, cache_dir=cache_dir))
    except Exception as err:  # noqa: BLE001
        raise _hub_error(name, err) from err


def chosen_files(files: list[str]) -> list[str]:
    """Patterns of what to fetch: config, tokenizer files, and one weight format (safetensors if any)."""
    has_safetensors = any(f.endswith(".safetensors") for f in files)
    return [CONFIG_FILE, *TOKENIZER_FILES, *(SAFETENSORS_FILES if has_safetensors else BIN_FILES)]


def _cached(name: str, cache_dir: str | Path | None) -> Path | None:
    """The cached snapshot with a config and weights, or None (nothing is fetched)."""
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(name, cache_dir=cache_dir, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached (LocalEntryNotFoundError) or an invalid name
        return None
    has_weights = (
        any((folder / f).is_file() for f in (SAFETENSORS_FILE, BIN_FILE, SAFETENSORS_FILE + INDEX_SUFFIX))
        or (folder / (BIN_FILE + INDEX_SUFFIX)).is_file()
    )
    return folder if (folder / CONFIG_FILE).is_file() and has_weights else None


def _matches(file: str, patterns: list[str]) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(file, p) for p in patterns)


def _is_weight(file: str) -> bool:
    return file.endswith((".safetensors", ".bin"))


def _hub_error(name: str, err: Exception) -> CodedError:
    kind = type(err).__name__
    if kind in ("RepositoryNotFoundError", "GatedRepoError", "HFValidationError"):
        message = (
            f"{name} was not found on the Hugging Face Hub (or needs a login): check the name, e.g. bert-base-uncased."
        )
        return CodedError("hub_not_found", message, name=name)
    return CodedError("hub_offline", f"{offline_message(name)} ({kind})", name=name)
