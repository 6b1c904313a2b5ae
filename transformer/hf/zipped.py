"""A Hugging Face model folder that arrives as a zip (uploaded as one, or its files zipped together by
the page), unpacked without trusting it and checked before anything is built.

Only the files a folder is made of (config, weights, shard indexes, tokenizer files, preprocessor)
are taken, at the archive's top or in one folder; each is written under a fresh folder by its base
name. Refused with one message: a link (symlink) in the archive, a name that climbs out of the
folder (``../``, an absolute path), two files with one name, more than :data:`MAX_ENTRIES` entries,
and more unpacked bytes than the limit, counted as they are written (a zip bomb stops there).

:func:`check_unpacked` runs every check :func:`~transformer.hf.load_hf_folder` runs before it reads
a tensor (config, family, sizes, the weights' shapes from the safetensors headers, the tokenizer);
it runs inside the upload's isolated child, so the server only builds folders that passed.
"""

from __future__ import annotations

import stat
import zipfile
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

from ..checkpoints.errors import CheckpointError, CodedError
from .families import family_for, importer_of
from .folder import CONFIG_FILE, MAX_JSON_BYTES, MAX_WEIGHTS_MB, check_sizes, header_shapes, read_hf_config
from .folder import weight_files as find_weight_files

FOLDER_FILES = (  # patterns of the files a model folder is made of; anything else is left in the zip
    CONFIG_FILE,
    "*.safetensors",
    "pytorch_model*.bin",
    "*.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "target_vocab.json",
    "merges.txt",
    "*.spm",
    "preprocessor_config.json",
    "generation_config.json",
)
MAX_ENTRIES = 2000
EXTRA_MB = 128  # tokenizer files and the rest, beside the weights
CHUNK = 1024**2


def is_hf_zip(path: Path) -> bool:
    """A zip whose config.json (at its top or in one folder) names a ``model_type``."""
    import json

    try:
        with zipfile.ZipFile(path) as archive:
            configs = [
                i
                for i in archive.infolist()[:MAX_ENTRIES]
                if PurePosixPath(i.filename).name == CONFIG_FILE and len(PurePosixPath(i.filename).parts) <= 2
            ]
            if len(configs) != 1 or configs[0].file_size > MAX_JSON_BYTES:
                return False
            return "model_type" in json.loads(archive.read(configs[0]).decode("utf-8"))
    except (zipfile.BadZipFile, OSError, ValueError, RecursionError, TypeError, KeyError):
        return False


def unpack_hf_zip(path: Path, into: Path, max_mb: float = MAX_WEIGHTS_MB) -> list[tuple[str, int]]:
    """The folder's files from the zip at ``path`` written into the new folder ``into``;
    [(file name, bytes)] in name order. CheckpointError naming what is refused."""
    limit = int((max_mb + EXTRA_MB) * 1024**2)
    try:
        with zipfile.ZipFile(path) as archive:
            members = _members(archive, path.name, limit)
            into.mkdir(parents=True)
            written = 0
            for base, info in sorted(members.items()):
                written += _extract(archive, info, into / base, limit - written, path.name)
    except zipfile.BadZipFile as err:
        raise CodedError("not_zip", f"{path.name} is not a readable zip archive ({err}).", name=path.name) from err
    return [(base, (into / base).stat().st_size) for base in sorted(members)]


def _members(archive: zipfile.ZipFile, name: str, limit: int) -> dict[str, zipfile.ZipInfo]:
    infos = archive.infolist()
    if len(infos) > MAX_ENTRIES:
        raise CheckpointError(
            f"{name} has {len(infos):,} entries; a model folder has a few files (limit {MAX_ENTRIES})."
        )
    picked: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        raw = info.filename.replace("\\", "/")
        parts = PurePosixPath(raw).parts
        if raw.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
            message = f"{name} holds {info.filename!r}, a path outside the folder: it is not opened."
            raise CodedError("zip_outside", message, name=name, entry=info.filename[:200])
        if stat.S_ISLNK(info.external_attr >> 16):
            message = f"{name} holds a link ({info.filename}): zip the model folder's files themselves."
            raise CodedError("zip_link", message, name=name, entry=info.filename[:200])
        if info.is_dir() or not parts or parts[0] == "__MACOSX" or len(parts) > 2:
            continue
        if not any(fnmatch(parts[-1], pattern) for pattern in FOLDER_FILES):
            continue
        if parts[-1] in picked:
            message = f"{name} holds more than one {parts[-1]}: zip one model folder only."
            raise CodedError("zip_twice", message, name=name, file=parts[-1])
        picked[parts[-1]] = info
    if CONFIG_FILE not in picked:
        message = f"{name} has no {CONFIG_FILE}: zip the whole folder that save_pretrained() wrote."
        raise CodedError("no_config", message, name=name)
    declared = sum(i.file_size for i in picked.values())
    if declared > limit:
        mb, most = f"{declared / 1024**2:,.0f}", f"{limit / 1024**2:,.0f}"
        raise CodedError("zip_too_big", f"{name} would unpack to {mb} MB (limit {most} MB).", name=name, limit=most)
    return picked


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, room: int, name: str) -> int:
    """Copy one member to ``target``; stops when it unpacks to more than ``room`` bytes (or a JSON file
    past its cap) whatever the archive declares."""
    cap = min(room, MAX_JSON_BYTES) if target.suffix == ".json" and target.name != "tokenizer.json" else room
    written = 0
    with archive.open(info) as src, open(target, "xb") as dst:
        while chunk := src.read(CHUNK):
            written += len(chunk)
            if written > cap:
                most = f"{cap / 1024**2:,.0f}"
                message = (
                    f"{name}: {info.filename} unpacks to more than {most} MB (it declares {info.file_size:,} bytes); "
                    "it is not opened."
                )
                raise CodedError("zip_too_big", message, name=name, limit=most)
            dst.write(chunk)
    return written


def check_unpacked(folder: Path, max_mb: float = MAX_WEIGHTS_MB) -> dict:
    """Every check before a tensor is read: {"model_type", "family", "weights"}; CheckpointError when one fails."""
    from .importer import _meta, check_fits
    from .tokenizer_files import load_tokenizer

    hf = read_hf_config(folder)
    family = family_for(hf)
    files = find_weight_files(folder)
    check_sizes(files, max_mb)
    if not family.external:
        shapes = header_shapes(files)
        if shapes is not None:
            check_fits(importer_of(family)(hf, _meta(shapes), files.names), files.names)
        load_tokenizer(folder, family.model_type)
    return {"model_type": family.model_type, "family": family.title, "weights": files.names}
