"""The IMDB Large Movie Review dataset (Maas et al., ACL 2011) in its published layout.

``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt``, either as an extracted folder or as the
``aclImdb_v1.tar.gz`` archive, which is read in place (nothing is extracted to disk).
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
ENV_VAR = "ATTENTION_LAB_IMDB"
SPLITS = ("train", "test")
LABELS = {"neg": 0, "pos": 1}

_REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_CANDIDATES = (
    _REPO_ROOT.parent / "shared" / "data" / "aclImdb.tar.gz",
    _REPO_ROOT / "data" / "aclImdb_v1.tar.gz",
    _REPO_ROOT / "data" / "aclImdb",
)
# Any prefix is allowed before the split folder, so an archive repacked under another top
# folder still reads; `unsup/` and the `*.feat` files never match.
_MEMBER = re.compile(r"(?:^|/)(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")


@dataclass(frozen=True)
class Example:
    """One review: its text and its label (0 = negative, 1 = positive)."""

    text: str
    label: int


def _help(problem: str) -> str:
    return (
        f"{problem}\nGet the IMDB dataset from {IMDB_URL} (about 80 MB) and point the command at "
        f"the archive or its extracted aclImdb/ folder with --data PATH "
        f"(or set {ENV_VAR}=PATH)."
    )


def default_imdb_path() -> Path:
    """The IMDB data to use when no ``--data`` is given.

    ``$ATTENTION_LAB_IMDB`` if set, else the first that exists of ``../shared/data/aclImdb.tar.gz``
    (next to the repository), ``data/aclImdb_v1.tar.gz`` and ``data/aclImdb/`` in the repository.
    Raises FileNotFoundError, saying where to get the data, when none is found.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        if not path.exists():
            raise FileNotFoundError(_help(f"{ENV_VAR} is set to {path}, which does not exist."))
        return path
    for candidate in _DEFAULT_CANDIDATES:
        if candidate.exists():
            return candidate
    tried = ", ".join(str(c) for c in _DEFAULT_CANDIDATES)
    raise FileNotFoundError(_help(f"No IMDB data found (looked for {tried})."))


def _sort_key(entry: tuple[str, int, int, str]) -> tuple[int, int]:
    _, label, review_id, _ = entry
    return label, review_id


def _iter_archive(path: Path, split: str) -> Iterator[tuple[str, int, int, str]]:
    """(member name, label, review id, text) for the split's reviews in a tar archive."""
    # Streaming mode ("r|*") reads the archive once, front to back, without building an index.
    with tarfile.open(path, mode="r|*") as tar:
        for member in tar:
            match = _MEMBER.search(member.name)
            if not member.isfile() or not match or match.group(1) != split:
                continue
            raw = tar.extractfile(member).read()
            yield member.name, LABELS[match.group(2)], int(match.group(3)), _decode(raw, member.name)


def _find_root(path: Path) -> Path | None:
    """The folder holding train/ and test/: ``path`` itself or its ``aclImdb/`` child."""
    for root in (path, path / "aclImdb"):
        if any((root / split / label).is_dir() for split in SPLITS for label in LABELS):
            return root
    return None


def _iter_folder(path: Path, split: str) -> Iterator[tuple[str, int, int, str]]:
    """(file name, label, review id, text) for the split's reviews in an extracted folder."""
    root = _find_root(path)
    if root is None:
        return
    for label_name, label in LABELS.items():
        folder = root / split / label_name
        if not folder.is_dir():
            continue
        for file in folder.iterdir():
            match = _MEMBER.search(file.as_posix())
            if match and file.is_file():
                yield str(file), label, int(match.group(3)), _decode(file.read_bytes(), str(file))


def _decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{name} is not UTF-8 text ({err}); is this the IMDB dataset?") from err


def load_imdb(path: str | Path, split: str) -> list[Example]:
    """All labelled reviews of ``split`` ("train" or "test") from an archive or a folder.

    Examples come sorted by label (negative first), then by review id, so a folder and its
    archive give the same list. Raises FileNotFoundError for a missing path and ValueError for
    a path without the IMDB layout; both messages say where to get the data.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}.")
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(_help(f"{path} does not exist."))
    if path.is_dir():
        entries = list(_iter_folder(path, split))
    elif tarfile.is_tarfile(path):
        try:
            entries = list(_iter_archive(path, split))
        except (tarfile.TarError, EOFError, OSError) as err:
            raise ValueError(_help(f"{path} could not be read as a tar archive ({err}).")) from err
    else:
        raise ValueError(_help(f"{path} is neither a folder nor a tar archive."))
    if not entries:
        raise ValueError(
            _help(f"{path} has no {split}/pos or {split}/neg reviews named <id>_<rating>.txt (the aclImdb layout).")
        )
    entries.sort(key=_sort_key)
    return [Example(text, label) for _, label, _, text in entries]


def _split_key(seed: int, index: int, example: Example) -> tuple[str, int]:
    # A hash of the content rather than random.shuffle: the split stays the same whatever
    # order the examples arrive in and whatever Python version runs it.
    digest = hashlib.sha256(f"{seed}\x00{example.label}\x00{example.text}".encode()).hexdigest()
    return digest, index


def _ranked_runs(indices: list[int], label: int, seed: int, block: int) -> list[int]:
    """``indices`` cut into runs of ``block`` consecutive ones, the runs put in an order fixed by ``seed``."""
    runs = [indices[i : i + block] for i in range(0, len(indices), block)]
    key = [hashlib.sha256(f"{seed}\x00{label}\x00run {r}".encode()).hexdigest() for r in range(len(runs))]
    return [i for r in sorted(range(len(runs)), key=key.__getitem__) for i in runs[r]]


def train_val_split(
    examples: Sequence[Example], val_fraction: float, seed: int = 0, block: int = 1
) -> tuple[list[Example], list[Example]]:
    """Deterministic split stratified by label: about ``val_fraction`` of each label goes to
    validation. Both lists keep the input order.

    ``block`` > 1: validation takes whole runs of ``block`` consecutive examples of a label instead of
    single ones. IMDB's review ids run film by film (neighbouring reviews often name the same actors),
    so runs share fewer films with the training part (bench/bench_imdb_film_overlap.py: 43 % of validation
    reviews share two rare names with a training review, 29 % with runs of 100; test 19 %)."""
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), not {val_fraction}.")
    if block < 1:
        raise ValueError(f"block must be at least 1, not {block}.")
    by_label: dict[int, list[int]] = {}
    for index, example in enumerate(examples):
        by_label.setdefault(example.label, []).append(index)
    val_indices: set[int] = set()
    for label, indices in by_label.items():
        n_val = int(len(indices) * val_fraction + 0.5)
        if block == 1:
            ranked = sorted(indices, key=lambda i: _split_key(seed, i, examples[i]))
        else:
            ranked = _ranked_runs(indices, label, seed, block)
        val_indices.update(ranked[:n_val])
    train = [ex for i, ex in enumerate(examples) if i not in val_indices]
    val = [ex for i, ex in enumerate(examples) if i in val_indices]
    return train, val


def download_imdb(dest: str | Path, url: str = IMDB_URL, timeout: float = 60.0) -> Path:
    """Download the official archive to ``dest`` (a folder, or the archive's file name).

    Returns the archive's path. Writes to a ``.part`` file first, so an interrupted download
    never leaves a truncated archive behind. Raises ConnectionError when the download fails.
    """
    dest = Path(dest).expanduser()
    target = dest / "aclImdb_v1.tar.gz" if dest.is_dir() else dest
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(partial, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
    except (urllib.error.URLError, OSError) as err:
        partial.unlink(missing_ok=True)
        raise ConnectionError(
            f"Could not download {url} ({err}). Download it by hand (a browser or curl), then "
            f"pass the archive with --data PATH or set {ENV_VAR}=PATH."
        ) from err
    partial.replace(target)
    return target
