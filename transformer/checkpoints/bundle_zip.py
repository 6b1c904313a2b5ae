"""A bundled-model folder uploaded as a ``.zip``, unpacked safely.

Only the bundle's known file names are taken, each written under a fresh temporary folder by
its base name (never by the path stored in the archive, so ``../`` or absolute names cannot
escape it); the bytes actually unpacked are counted, so a zip bomb stops at the limit.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path, PurePosixPath

import torch
from safetensors import SafetensorError

from ..bundle import CONFIG_FILE, METRICS_FILE, TARGET_VOCAB_FILE, VOCAB_FILE, WEIGHTS_FILE, load_bundle
from ..core.config import MAX_CONFIG_BYTES
from ..core.loaded import LoadedModel
from ..core.pieces import TOKENIZER_FILE
from .errors import CheckpointError

BUNDLE_FILES = (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, TARGET_VOCAB_FILE, METRICS_FILE, TOKENIZER_FILE)
MAX_UNPACKED_BYTES = 400 * 1024**2
MAX_ENTRIES = 1000
SMALL_FILES = (CONFIG_FILE, METRICS_FILE)  # JSON read whole: refused above MAX_CONFIG_BYTES before unpacking
CHUNK = 1024**2


def is_bundle_zip(path: Path) -> bool:
    """A zip holding a bundle's config.json (a torch.save file is a zip too, without one)."""
    if not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            return any(PurePosixPath(n).name == CONFIG_FILE for n in archive.namelist()[:MAX_ENTRIES])
    except (zipfile.BadZipFile, OSError):
        return False


def load_bundle_zip(path: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Unpack the bundle in ``path`` to a temporary folder and load it from there."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive, tempfile.TemporaryDirectory(prefix="bundle-") as tmp:
            folder = Path(tmp) / _bundle_name(path)
            folder.mkdir()
            for info, name in _pick_members(archive, path.name).items():
                _extract(archive, info, folder / name)
            try:
                return load_bundle(folder, device)
            except (OSError, ValueError, TypeError, RuntimeError, SafetensorError) as err:
                # RuntimeError: also RecursionError (a deeply nested JSON file)
                raise CheckpointError(f"{path.name} holds a bundle that does not load: {_reason(err)}") from err
    except zipfile.BadZipFile as err:
        raise CheckpointError(f"{path.name} is not a readable zip archive ({err}).") from err


def _reason(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "a JSON file in it is nested too deeply to read."
    if isinstance(err, SafetensorError):
        return f"{WEIGHTS_FILE} is not a valid safetensors file ({err}); save the bundle again."
    if isinstance(err, OSError):
        return f"{Path(err.filename or '').name or 'a file'} could not be read ({err.strerror or err})."
    return str(err)


def _bundle_name(path: Path) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in path.stem).strip(".") or "bundle"
    return safe[:80]


def _pick_members(archive: zipfile.ZipFile, name: str) -> dict[zipfile.ZipInfo, str]:
    """The bundle files in the archive (in one folder, or at its top), by their base names."""
    infos = archive.infolist()
    if len(infos) > MAX_ENTRIES:
        raise CheckpointError(f"{name} has {len(infos)} entries; a bundle has at most {len(BUNDLE_FILES)} files.")
    picked: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        parts = PurePosixPath(info.filename.replace("\\", "/")).parts
        if info.is_dir() or not parts or parts[-1] not in BUNDLE_FILES or len(parts) > 2 or parts[0] == "__MACOSX":
            continue  # other files (e.g. a Mac's __MACOSX folder) are ignored, never unpacked
        if parts[-1] in picked:
            raise CheckpointError(f"{name} holds more than one {parts[-1]}: zip one bundle folder only.")
        picked[parts[-1]] = info
    for base, info in picked.items():
        if base in SMALL_FILES and info.file_size > MAX_CONFIG_BYTES:
            raise CheckpointError(
                f"{name}: its {base} is {info.file_size:,} bytes; a bundle's {base} is a few kB "
                f"(limit {MAX_CONFIG_BYTES:,}). Zip the folder that save_bundle wrote."
            )
    if sum(i.file_size for i in picked.values()) > MAX_UNPACKED_BYTES:
        raise CheckpointError(f"{name} would unpack to more than {MAX_UNPACKED_BYTES // 1024**2} MB.")
    return {info: base for base, info in picked.items()}


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
    """Copy one member to ``target``, stopping if it unpacks to more than the limit."""
    written = 0
    with archive.open(info) as src, open(target, "wb") as dst:
        while chunk := src.read(CHUNK):
            written += len(chunk)
            if written > (MAX_CONFIG_BYTES if target.name in SMALL_FILES else MAX_UNPACKED_BYTES):
                raise CheckpointError(f"{info.filename} unpacks to more than {MAX_UNPACKED_BYTES // 1024**2} MB.")
            dst.write(chunk)
