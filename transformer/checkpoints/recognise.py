"""An uploaded file read once, in ONE child process of :func:`~transformer.checkpoints.isolation.run_isolated`,
and recognised as one of the kinds in :mod:`~transformer.checkpoints.upload_kinds`.

Kept apart from ``isolation`` so that the isolated reader imports no kind of model: a kind's reader
(e.g. ``transformer.hf``) may itself read through the isolated reader.
"""

from __future__ import annotations

from .isolation import run_isolated


def _read_upload(path, max_mb: float | None, device, limits: dict):
    """(kind, what was read) of an uploaded file: every reader of its bytes (zip listing and
    unpacking, JSON, safetensors header, ``torch.load(weights_only=True)``) runs in ONE child."""
    from pathlib import Path

    from .safe_load import MAX_FILE_MB
    from .upload_kinds import from_plain, read_in_child

    path = Path(path)
    found = run_isolated(read_in_child, str(path), max_mb or MAX_FILE_MB, what=f"Reading {path.name}", **limits)
    return found["kind"], from_plain(found["kind"], found["plain"], device)


def recognise_isolated(path, max_mb: float | None = None, device="cpu", **limits):
    """An uploaded file read once by :func:`run_isolated` and recognised: a tagged
    :data:`~transformer.checkpoints.upload_kinds.Upload` (text checkpoint, bundle, course ViT).
    Raises CheckpointError with what is wrong; ``limits`` as for run_isolated."""
    from .upload_kinds import tagged

    return tagged(*_read_upload(path, max_mb, device, limits))


def read_upload_isolated(path, max_mb: float | None = None, device="cpu", **limits):
    """An uploaded file read by :func:`run_isolated`: a LoadedModel for a zipped bundle, else a
    RawCheckpoint (:func:`~transformer.checkpoints.safe_load.read_checkpoint`'s result), not yet
    recognised. ``limits`` as for run_isolated."""
    return _read_upload(path, max_mb, device, limits)[1]
