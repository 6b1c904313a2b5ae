"""Uploaded bytes (from a browser) through the same safe readers as files on disk.

The bytes are written to a fresh temporary folder under a sanitised copy of the uploaded name
(so messages name the user's file), read, and deleted.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch

from ..bundle import LoadedModel
from ..tokenizer import Vocab
from .bundle_zip import is_bundle_zip, load_bundle_zip
from .detect import Detection, detect
from .errors import CheckpointError
from .isolation import read_checkpoint_isolated
from .safe_load import MAX_FILE_MB
from .vocabulary import read_vocab_file

T = TypeVar("T")


def safe_file_name(name: str) -> str:
    """The base name with only letters, digits and -_. kept (no folders, no hidden files)."""
    base = Path(name.replace("\\", "/")).name
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in base).lstrip(".")
    return cleaned[-120:] or "upload"


def _with_file(name: str, data: bytes, read: Callable[[Path], T]) -> T:
    with tempfile.TemporaryDirectory(prefix="upload-") as folder:
        path = Path(folder) / safe_file_name(name)
        path.write_bytes(data)
        return read(path)


def read_upload(
    name: str, data: bytes, device: str | torch.device = "cpu", max_mb: float = MAX_FILE_MB
) -> Detection | LoadedModel:
    """A zipped bundle loads as it is (a LoadedModel); any other checkpoint is recognised (a
    Detection, built later with the user's answers). Raises CheckpointError with what is wrong."""
    if len(data) > max_mb * 1024**2:
        raise CheckpointError(f"{safe_file_name(name)} is {len(data) / 1024**2:.0f} MB; the limit is {max_mb:.0f} MB.")

    def read(path: Path) -> Detection | LoadedModel:
        if is_bundle_zip(path):
            return load_bundle_zip(path, device)
        if path.suffix.lower() == ".zip":
            raise CheckpointError(f"{path.name} is a zip without a bundle's config.json (or not a zip at all).")
        return detect(read_checkpoint_isolated(path, max_mb))  # parsed in a child with time/memory limits

    return _with_file(name, data, read)


def read_vocab_upload(name: str, data: bytes) -> Vocab:
    """An uploaded vocab.txt or JSON list as a Vocab."""
    return _with_file(name, data, read_vocab_file)
