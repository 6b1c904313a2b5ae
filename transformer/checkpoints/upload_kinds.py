"""The kinds of model an uploaded file can be, recognised in one read.

An upload is read once, in one child process (:func:`~transformer.checkpoints.recognise.recognise_isolated`):
:func:`read_in_child` asks each kind in :data:`KINDS` in turn whether the file is one of its kind and
returns what the first one read, as plain data. The server rebuilds it (:func:`from_plain`) and tags
it (:func:`tagged`):

- :class:`TextCheckpoint` (``"text-checkpoint"``): a state_dict of a text Transformer, recognised
  (a Detection; the model is built later with the user's answers);
- :class:`BundleUpload` (``"bundle"``): a zipped bundled-model folder, loaded as it is;
- :class:`CourseViTUpload` (``"course-vit"``): the course notebook's Vision Transformer weights
  (built once the user has said what the weights cannot: heads, channels, class names);
- :class:`HFFolderUpload` (``"hf-folder"``): a zipped Hugging Face model folder. The child unpacks it
  (:mod:`transformer.hf.zipped`: size caps, no links, no names outside the folder) beside the upload
  and runs every check before a tensor is read; the server then opens the checked folder with
  :func:`~transformer.hf.load_hf_folder` (its weights through the isolated reader) and, where
  ``transformers`` is installed, compares it with the reference on one small input (a sentence; a
  picture for ViT).

A GGUF file (``"gguf"``) is shown as a one-file :class:`HFFolderUpload`: the child runs every check that
reads no tensor (:func:`~transformer.hf.gguf_import.check_gguf`), the server dequantises it
(:func:`~transformer.hf.gguf_import.load_gguf`).

A new kind is one more :class:`UploadKind` in :data:`KINDS` and one more tagged class.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from ..core.loaded import LoadedModel
from .detect import Detection, detect
from .errors import CheckpointError
from .safe_load import RawCheckpoint, read_checkpoint_plain

TEXT_CHECKPOINT, BUNDLE, COURSE_VIT = "text-checkpoint", "bundle", "course-vit"
HF_FOLDER = "hf-folder"
GGUF = "gguf"  # a GGUF file (llama.cpp, Ollama, LM Studio): checked in the child, dequantised by the server
HF_UNPACKED = "hf-unpacked"  # the folder a zipped Hugging Face folder is unpacked into, beside the upload


@dataclass(frozen=True)
class TextCheckpoint:
    """A text Transformer's state_dict, recognised: its family, stacks and sizes."""

    detection: Detection
    kind: ClassVar[str] = TEXT_CHECKPOINT


@dataclass(frozen=True)
class BundleUpload:
    """A zipped bundled-model folder, loaded and ready to use."""

    loaded: LoadedModel
    kind: ClassVar[str] = BUNDLE


@dataclass(frozen=True)
class CourseViTUpload:
    """The course notebook's ViT (or ViTSegmentation) weights and the plain values saved beside them."""

    raw: RawCheckpoint
    kind: ClassVar[str] = COURSE_VIT

    @property
    def state(self) -> dict[str, torch.Tensor]:
        return self.raw.state

    @property
    def hints(self) -> dict[str, object]:
        return self.raw.hints


@dataclass(frozen=True)
class HFFolderUpload:
    """A Hugging Face model folder, imported: the model (an ImportedModel, or a vision model for ViT),
    the files unpacked [(name, bytes)], and the reference check (None without ``transformers``)."""

    loaded: object
    files: tuple[tuple[str, int], ...]
    check: object = None
    kind: ClassVar[str] = HF_FOLDER


Upload = TextCheckpoint | BundleUpload | CourseViTUpload | HFFolderUpload


@dataclass(frozen=True)
class UploadKind:
    """One kind of upload: ``matches(path)`` says whether a file is of this kind (cheap, in the child);
    ``read(path, max_mb)`` reads it in the child as (the kind it is, plain data)."""

    name: str
    matches: Callable[[Path], bool]
    read: Callable[[str, float], tuple[str, dict]]


def read_in_child(path: str, max_mb: float) -> dict:
    """In the child: {"kind", "plain"} from the first kind in :data:`KINDS` that matches ``path``."""
    for kind in KINDS:
        if kind.matches(Path(path)):
            found, plain = kind.read(path, max_mb)
            return {"kind": found, "plain": plain}
    raise CheckpointError(f"{Path(path).name} is no kind of model this app reads.")  # KINDS ends with a catch-all


def _checkpoint(path: str, max_mb: float) -> tuple[str, dict]:
    """In the child: a checkpoint file, a course ViT when its names are the notebook's."""
    from ..vision.course_import import is_course_vit

    plain = read_checkpoint_plain(path, max_mb)
    return (COURSE_VIT if is_course_vit(plain["state"]) else TEXT_CHECKPOINT), plain


def _is_bundle_zip(path: Path) -> bool:
    from .bundle_zip import is_bundle_zip

    return is_bundle_zip(path)


def _bundle(path: str, max_mb: float) -> tuple[str, dict]:
    """In the child: a zipped bundle unpacked, checked and loaded, as plain data (config dict,
    weights, vocabularies' tokens, metrics, notes)."""
    from .bundle_zip import load_bundle_zip

    loaded = load_bundle_zip(path, "cpu")
    return BUNDLE, {
        "config": loaded.config.to_dict(),
        "state": loaded.model.state_dict(),
        "itos": loaded.vocab.itos,
        "target_itos": loaded.target_vocab.itos if loaded.target_vocab is not None else None,
        "name": loaded.name,
        "metrics": json.dumps(loaded.metrics) if loaded.metrics is not None else None,
        "notes": list(loaded.notes),
        "nonfinite_weights": list(loaded.nonfinite_weights),
        "tokenizer": loaded.splitter.to_json() if loaded.splitter is not None else None,
    }


def _is_hf_zip(path: Path) -> bool:
    from ..hf.zipped import is_hf_zip

    return is_hf_zip(path)


def _hf_folder(path: str, max_mb: float) -> tuple[str, dict]:
    """In the child: the zip unpacked beside the upload (at most twice the upload's limit) and checked
    up to the weights' shapes and the tokenizer; the folder's path and files as plain data."""
    from ..hf.zipped import check_unpacked, unpack_hf_zip

    path = Path(path)
    folder = path.parent / HF_UNPACKED / (_folder_name(path) or "model")
    files = unpack_hf_zip(path, folder, 2 * max_mb)
    found = check_unpacked(folder)
    return HF_FOLDER, {"folder": str(folder), "files": [list(f) for f in files], **found}


def _folder_name(path: Path) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in path.stem).strip(".")[:80]


def _is_gguf(path: Path) -> bool:
    from ..hf.gguf_import import is_gguf

    return is_gguf(path)


def _gguf(path: str, max_mb: float) -> tuple[str, dict]:
    """In the child: every check of a GGUF file that reads no tensor (header, architecture, shapes,
    tokenizer); the server then reads the tensors from the checked file."""
    from ..hf.gguf_import import check_gguf

    check_gguf(path, max_mb)
    return GGUF, {"path": str(path), "bytes": Path(path).stat().st_size}


def _other_zip(path: str, max_mb: float) -> tuple[str, dict]:
    raise CheckpointError(f"{Path(path).name} is a zip without a bundle's config.json (or not a zip at all).")


KINDS = (
    UploadKind(GGUF, _is_gguf, _gguf),  # by its magic: before the checkpoint catch-all
    UploadKind(HF_FOLDER, _is_hf_zip, _hf_folder),  # before the bundle: a Hugging Face folder has a config.json too
    UploadKind(BUNDLE, _is_bundle_zip, _bundle),
    UploadKind("zip", lambda path: path.name.lower().endswith(".zip"), _other_zip),
    UploadKind(TEXT_CHECKPOINT, lambda path: True, _checkpoint),  # checkpoint files: text or course ViT
)


def from_plain(
    kind: str, plain: dict, device: str | torch.device = "cpu"
) -> LoadedModel | RawCheckpoint | HFFolderUpload:
    """The server's side of what the child read: a LoadedModel for a bundle, the imported model for a
    Hugging Face folder (while its unpacked files still exist), else a RawCheckpoint."""
    if kind == BUNDLE:
        return _loaded_from_plain(plain, device)
    if kind == HF_FOLDER:
        return _hf_from_plain(plain, device)
    if kind == GGUF:
        return _gguf_from_plain(plain, device)
    return RawCheckpoint(**plain)


def tagged(kind: str, found: LoadedModel | RawCheckpoint) -> Upload:
    """``found`` (:func:`from_plain`'s result) as its tagged kind; a text checkpoint is recognised here
    (raises CheckpointError when no family fits)."""
    if kind == BUNDLE:
        return BundleUpload(found)
    if kind == COURSE_VIT:
        return CourseViTUpload(found)
    if kind in (HF_FOLDER, GGUF):
        return found
    return TextCheckpoint(detect(found))


def _loaded_from_plain(plain: dict, device) -> LoadedModel:
    """A zipped bundle rebuilt from checked plain data (the config's caps are checked again before
    anything is built; the weights must fit it exactly)."""
    from ..bundle import checked_splitter
    from ..core.config import ModelConfig
    from ..core.model import build_model
    from ..core.pieces import PieceSplitter
    from ..core.tokenizer import Vocab

    config = ModelConfig.from_dict(plain["config"])
    model = build_model(config)
    model.load_state_dict(plain["state"])
    target = Vocab.from_itos(plain["target_itos"]) if plain["target_itos"] is not None else None
    vocab = Vocab.from_itos(plain["itos"])
    pieces = plain.get("tokenizer")
    splitter = checked_splitter(PieceSplitter.from_json(pieces), vocab) if pieces is not None else None
    return LoadedModel(
        model.to(device).eval(),
        config,
        vocab,
        target,
        plain["name"],
        "attention-lab",
        json.loads(plain["metrics"]) if plain["metrics"] is not None else None,
        tuple(plain["notes"]),
        nonfinite_weights=tuple(plain["nonfinite_weights"]),
        splitter=splitter,
    )


def _hf_from_plain(plain: dict, device) -> HFFolderUpload:
    """The checked folder opened (weights through the isolated reader) and compared with the reference."""
    from ..hf import load_hf_folder
    from ..hf.reference import reference_check

    loaded = load_hf_folder(plain["folder"], device)
    check = reference_check(plain["folder"], loaded)
    return HFFolderUpload(loaded, tuple((str(n), int(b)) for n, b in plain["files"]), check)


def _gguf_from_plain(plain: dict, device) -> HFFolderUpload:
    """The checked GGUF file read by the server (tensors dequantised to float32), shown as a one-file folder."""
    from ..hf.gguf_import import load_gguf

    loaded = load_gguf(plain["path"], device)
    return HFFolderUpload(loaded, ((Path(plain["path"]).name, int(plain["bytes"])),), None)
