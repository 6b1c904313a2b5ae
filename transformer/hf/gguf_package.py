"""A GGUF file installed as PyPI packages in chunks (a file too large for one package), joined at first use.

A model folder that holds ``gguf_package.json`` instead of a ``.gguf`` file names the file, its size and
SHA-256, and its chunks in order: for each, the importable module of the package that holds it, the
package's name (what to reinstall), the chunk's path inside the module, its size and SHA-256. At first use
the chunks are joined into the app's data folder (``$ATTENTION_LAB_DATA``, default ``data/`` beside the
app, where the class store lives too; ``models/<folder>/<file>`` there), the SHA-256 of the whole is
checked, and this is said once on stderr. A ``.verified`` stamp beside the joined file (its size, time and
hash) spares later starts the hashing; a joined file whose size or time changed is hashed again.

Nothing is downloaded: the packages are installed by ``pip install -r requirements.txt``. A missing
package, a chunk of the wrong size or SHA-256, or a joined file that does not hash right is one
:class:`CodedError` naming the package to reinstall (and the command); nothing else in the app depends on
it (``package_problem`` lets the pages leave the model out and say why).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..checkpoints.errors import CodedError

MANIFEST = "gguf_package.json"
DATA_ENV = "ATTENTION_LAB_DATA"  # the app's data folder (ui/classroom/store.py reads the same setting)
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data"
STAMP_SUFFIX = ".verified"
READ_BYTES = 1 << 20


@dataclass(frozen=True)
class Chunk:
    module: str  # the importable package holding the chunk
    package: str  # its name on PyPI (what to reinstall)
    path: str  # the chunk inside the module's folder
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    file: str
    bytes: int
    sha256: str
    version: str  # the packages' version (pinned in requirements.txt)
    chunks: tuple[Chunk, ...]

    def install_command(self, package: str) -> str:
        return f"pip install --force-reinstall {package}=={self.version}"


def read_manifest(folder: str | Path) -> Manifest | None:
    """The folder's ``gguf_package.json``, or None when it has none; CodedError when it is not a manifest."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        chunks = tuple(Chunk(**chunk) for chunk in data["chunks"])
        manifest = Manifest(data["file"], int(data["bytes"]), data["sha256"], data["version"], chunks)
    except (ValueError, KeyError, TypeError) as err:
        raise _error("manifest", f"{path} is not a readable package manifest ({type(err).__name__}).") from err
    if not chunks or Path(manifest.file).name != manifest.file or sum(c.bytes for c in chunks) != manifest.bytes:
        raise _error("manifest", f"{path}: its chunks do not add up to {manifest.file}.")
    return manifest


def data_folder() -> Path:
    """The app's data folder: ``$ATTENTION_LAB_DATA``, else ``data/`` beside the app."""
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA)


def joined_path(folder: str | Path, manifest: Manifest) -> Path:
    """Where the joined file lives (whether or not it is there yet)."""
    return data_folder() / "models" / Path(folder).name / manifest.file


def packaged_file(folder: str | Path) -> Path:
    """The joined file of a packaged model folder, joined and checked now if it is not yet (see the module
    docstring); CodedError naming the package to reinstall when a chunk is missing or damaged."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        raise _error("manifest", f"{folder} holds no {MANIFEST}.")
    target = joined_path(folder, manifest)
    if _verified(target, manifest):
        return target
    chunks = [_chunk_file(chunk, manifest) for chunk in manifest.chunks]
    _join(chunks, manifest, target)
    shown = f"{manifest.sha256[:12]}…"
    print(
        f"Joined {manifest.file} ({manifest.bytes:,} bytes) from {len(chunks)} installed packages into {target.parent}; "
        f"SHA-256 {shown} checked.",
        file=sys.stderr,
    )
    return target


@functools.cache
def package_problem(folder: str) -> str | None:
    """None when the packaged model in ``folder`` is ready (joined and checked: the first call joins it),
    else the message of why not (once per process and folder)."""
    try:
        packaged_file(folder)
    except CodedError as err:
        return str(err)
    return None


def _chunk_file(chunk: Chunk, manifest: Manifest) -> Path:
    """The installed chunk, its size checked (its hash is checked as it is joined)."""
    spec = importlib.util.find_spec(chunk.module)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(places[0]) / chunk.path if places else None
    if path is None or not path.is_file():
        raise _missing(chunk, manifest, "is not installed")
    if path.stat().st_size != chunk.bytes:
        raise _missing(chunk, manifest, f"holds a chunk of {path.stat().st_size:,} bytes, not {chunk.bytes:,}")
    return path


def _join(chunks: list[Path], manifest: Manifest, target: Path) -> None:
    """The chunks written one after the other into a temporary file beside ``target``, each chunk's hash and the
    whole's checked, then renamed into place (another process joining at the same time is harmless)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=False)
    except OSError as err:
        raise _error(
            "data_folder",
            f"{target.parent} cannot be written ({err.strerror}): set {DATA_ENV} to a folder this app may write.",
        ) from err
    whole = hashlib.sha256()
    try:
        with handle:
            for chunk, path in zip(manifest.chunks, chunks):
                part = hashlib.sha256()
                with open(path, "rb") as source:
                    for block in iter(lambda: source.read(READ_BYTES), b""):
                        part.update(block)
                        whole.update(block)
                        handle.write(block)
                if part.hexdigest() != chunk.sha256:
                    raise _missing(chunk, manifest, "holds a damaged chunk (its SHA-256 is not the published one)")
        if whole.hexdigest() != manifest.sha256:
            raise _error(
                "damaged",
                f"{manifest.file} joined from its packages does not have the published SHA-256: reinstall them.",
            )
        os.chmod(handle.name, 0o644)  # a temporary file is the owner's only; the joined model is read by all
        os.replace(handle.name, target)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
    _stamp(target, manifest.sha256)


def _verified(target: Path, manifest: Manifest) -> bool:
    """The joined file is there with its stamp (same size and time), or hashes right now (stamped then)."""
    if not target.is_file() or target.stat().st_size != manifest.bytes:
        return False
    stat = target.stat()
    stamp = target.with_name(target.name + STAMP_SUFFIX)
    try:
        said = json.loads(stamp.read_text(encoding="utf-8"))
        if said == {"sha256": manifest.sha256, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}:
            return True
    except (OSError, ValueError):
        pass
    if _sha256(target) != manifest.sha256:
        return False
    _stamp(target, manifest.sha256)
    return True


def _stamp(target: Path, sha256: str) -> None:
    stat = target.stat()
    stamp = {"sha256": sha256, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    try:
        target.with_name(target.name + STAMP_SUFFIX).write_text(json.dumps(stamp), encoding="utf-8")
    except OSError:
        pass  # without a stamp the next start hashes the file again


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(READ_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def _missing(chunk: Chunk, manifest: Manifest, what: str) -> CodedError:
    command = manifest.install_command(chunk.package)
    message = f"The package {chunk.package} {what}: {manifest.file} cannot be joined. Reinstall it: {command}"
    return CodedError("gguf_package_chunk", message, package=chunk.package, command=command, file=manifest.file)


def _error(code: str, message: str) -> CodedError:
    return CodedError(f"gguf_package_{code}", message)
