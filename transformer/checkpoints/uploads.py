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

from ..core.loaded import LoadedModel
from ..core.tokenizer import Vocab
from .detect import Detection, detect
from .errors import CheckpointError
from .isolation import read_vocab_isolated
from .recognise import recognise_isolated
from .safe_load import MAX_FILE_MB
from .upload_kinds import BundleUpload, CourseViTUpload, HFFolderUpload, TextCheckpoint, Upload

T = TypeVar("T")


def safe_file_name(name: str) -> str:
    """The base name with only letters, digits and -_. kept (no folders, no hidden files)."""
    base = Path(name.replace("\\", "/")).name
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in base).lstrip(".")
    return cleaned[-120:] or "upload"


def _with_file(name: str, data: bytes, read: Callable[[Path], T]) -> T:
    """``read(path)`` of the bytes written to a fresh temporary folder; a message that names the
    folder (e.g. a reader quoting the whole path) is given back with the file's name only."""
    with tempfile.TemporaryDirectory(prefix="upload-") as folder:
        path = Path(folder) / safe_file_name(name)
        path.write_bytes(data)
        try:
            return read(path)
        except (ValueError, OSError, RuntimeError) as err:
            text = without_folder(str(err), folder).replace(f"{path.name}: {path.name}: ", f"{path.name}: ")
            if text == str(err):
                raise
            raise CheckpointError(text) from err


def without_folder(text: str, folder: str) -> str:
    """``text`` with every mention of the server's ``folder`` removed (the file names in it kept)."""
    return text.replace(folder.rstrip("/") + "/", "").replace(folder, "")


def recognise_upload(name: str, data: bytes, device: str | torch.device = "cpu", max_mb: float = MAX_FILE_MB) -> Upload:
    """The uploaded bytes read once (in a child with time and memory limits) and recognised: a
    TextCheckpoint, a BundleUpload or a CourseViTUpload. Raises CheckpointError with what is wrong."""
    if len(data) > max_mb * 1024**2:
        raise CheckpointError(f"{safe_file_name(name)} is {len(data) / 1024**2:.0f} MB; the limit is {max_mb:.0f} MB.")
    return _with_file(name, data, lambda path: recognise_isolated(path, max_mb, device))


def read_upload(
    name: str, data: bytes, device: str | torch.device = "cpu", max_mb: float = MAX_FILE_MB
) -> Detection | LoadedModel:
    """A zipped bundle or Hugging Face model folder loads as it is (a LoadedModel); any other checkpoint is recognised as a text
    model (a Detection, built later with the user's answers). Raises CheckpointError with what is
    wrong (a course ViT, which only :func:`recognise_upload` takes, with why it is no text model)."""
    upload = recognise_upload(name, data, device, max_mb)
    if isinstance(upload, (BundleUpload, HFFolderUpload)):  # a zipped bundle or Hugging Face folder: ready
        return upload.loaded
    if isinstance(upload, CourseViTUpload):
        return detect(upload.raw)  # raises: no text family fits the ViT's names
    assert isinstance(upload, TextCheckpoint)
    return upload.detection


def read_vocab_upload(name: str, data: bytes) -> Vocab:
    """An uploaded vocab.txt or JSON list as a Vocab (read in a child process with time and memory limits)."""
    return _with_file(name, data, read_vocab_isolated)
