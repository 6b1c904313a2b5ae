"""Import a checkpoint a learner trained elsewhere, safely, as one of our models.

Two steps, so a page can show what was recognised before anything is built::

    detection = inspect_checkpoint("model.pt")          # read safely + recognise; nothing runs
    findings(detection), asked(detection), defaults(detection)   # codes and values; summary() in English
    loaded = import_detected(detection, ImportOptions(vocab_path="vocab.txt", num_heads=4))

or in one call (what ``load_model`` and the CLI use): ``import_checkpoint(path, device, options)``.
Files: ``.safetensors``; ``torch.save`` files holding a state_dict, or a dict holding one under
``model`` / ``model_state_dict`` / ``state_dict`` (plus plain config values and an ``itos``
vocabulary list); a bundled-model folder zipped (``.zip``).

An uploaded file (bytes from a browser) is read once and tagged by kind: ``recognise_upload(name, data)``
gives a TextCheckpoint, a BundleUpload or a CourseViTUpload (``upload_kinds``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..core.loaded import LoadedModel
from ..core.tokenizer import Vocab
from .build import build_loaded, make_config, special_assumptions, stored_config
from .bundle_zip import is_bundle_zip, load_bundle_zip
from .detect import Detection, detect, findings, summary
from .errors import CheckpointError
from .findings import Finding
from .options import ImportOptions
from .questions import QUESTIONS, asked, defaults, resolve
from .safe_load import MAX_FILE_MB, MAX_PARAMETERS, MAX_VOCAB, read_checkpoint
from .upload_kinds import BundleUpload, CourseViTUpload, TextCheckpoint, Upload
from .uploads import read_upload, read_vocab_upload, recognise_upload
from .vocabulary import check_fits, read_vocab_file, vocab_from_list

__all__ = [
    "MAX_FILE_MB",
    "MAX_PARAMETERS",
    "MAX_VOCAB",
    "QUESTIONS",
    "BundleUpload",
    "CheckpointError",
    "CourseViTUpload",
    "Detection",
    "Finding",
    "TextCheckpoint",
    "Upload",
    "asked",
    "defaults",
    "findings",
    "import_checkpoint",
    "import_detected",
    "inspect_checkpoint",
    "is_bundle_zip",
    "read_upload",
    "read_vocab_upload",
    "recognise_upload",
    "summary",
]


def inspect_checkpoint(path: str | Path, max_mb: float = MAX_FILE_MB) -> Detection:
    """Read ``path`` without running code from it and recognise its architecture."""
    return detect(read_checkpoint(path, max_mb))


def import_checkpoint(
    path: str | Path, device: str | torch.device = "cpu", options: ImportOptions | None = None
) -> LoadedModel:
    """A checkpoint file (or a zipped bundle) as a :class:`LoadedModel` on ``device`` in eval mode."""
    path = Path(path)
    if is_bundle_zip(path):
        return load_bundle_zip(path, device)
    if path.suffix.lower() == ".zip":
        raise CheckpointError(f"{path.name} is a zip without a bundle's config.json (or is not a zip at all).")
    return import_detected(inspect_checkpoint(path), options or ImportOptions(), device)


def import_detected(
    d: Detection,
    options: ImportOptions,
    device: str | torch.device = "cpu",
    vocab: Vocab | None = None,
    target_vocab: Vocab | None = None,
) -> LoadedModel:
    """Build the model ``d`` describes with ``options`` answering what the weights cannot tell.
    ``vocab``/``target_vocab`` (already read, e.g. from an upload) replace the options' paths."""
    vocab, target_vocab, notes = _vocabularies(d, options, vocab, target_vocab)
    config, assumptions = stored_config(d), {}
    if config is None:
        answers = resolve(d, options, vocab)
        config = make_config(d, answers, target_vocab, options.bos, options.eos)
        assumptions = answers.assumptions(asked(d))
        if target_vocab is not None:
            assumptions.update(special_assumptions(config, target_vocab, options.bos, options.eos))
            notes.append(_start_note(config, target_vocab))
    else:
        notes.append("The config saved in the file was used as it is.")
    notes = [note.english() for note in d.notes] + notes
    if d.head is not None and len(d.head.layers) > 1:
        notes.append("The head's layers are joined by ReLU, as in most tutorials.")
    notes.append("Text is split with torchtext's basic_english rules, as in the course notebooks.")
    return build_loaded(d, config, vocab, target_vocab, device, notes, assumptions)


def _start_note(config, target_vocab: Vocab) -> str:
    if config.bos_id is None:
        return (
            "The target vocabulary has no start token: a target you give is fed to the decoder exactly as "
            "written; to let the decoder run on its own, name the start and end tokens (--bos, --eos)."
        )
    return (
        f"The start token {target_vocab.id_to_token(config.bos_id)!r} is put before every target you give "
        "(teacher forcing), as your training code most likely did."
    )


def _vocabularies(
    d: Detection, options: ImportOptions, given: Vocab | None, given_target: Vocab | None
) -> tuple[Vocab, Vocab | None, list[str]]:
    """The source vocabulary (given, a file, else the list in the checkpoint) and, for encoder-decoders,
    the target's."""
    notes: list[str] = []
    vocab = given or _one_vocab(options.vocab_path, d.raw.itos, d.raw.name, "a vocabulary")
    note = check_fits(vocab, d.vocab_size, "source" if d.decoder is not None else "model's")
    notes += [note] if note else []
    if d.decoder is None:
        return vocab, None, notes
    if given_target is not None:
        note = check_fits(given_target, d.target_vocab_size, "target")
        return vocab, given_target, notes + ([note] if note else [])
    if options.target_vocab_path is None and d.raw.target_itos is None:
        if len(vocab) != d.target_vocab_size:
            raise CheckpointError(
                f"This encoder-decoder's target embedding has {d.target_vocab_size:,} rows; upload the target "
                "vocabulary too (the source vocabulary does not fit it)."
            )
        notes.append("No target vocabulary was given: the source vocabulary is used for the target side too.")
        return vocab, vocab, notes
    target = _one_vocab(options.target_vocab_path, d.raw.target_itos, d.raw.name, "a target vocabulary")
    note = check_fits(target, d.target_vocab_size, "target")
    return vocab, target, notes + ([note] if note else [])


def _one_vocab(path: str | None, itos: list[str] | None, name: str, what: str) -> Vocab:
    if path is not None:
        return read_vocab_file(path)
    if itos is not None:
        return vocab_from_list(itos, name)
    raise CheckpointError(
        f"{name} needs {what}: upload vocab.txt (one token per line, line number = id) or a JSON list. From "
        "torchtext: open('vocab.txt', 'w').write('\\n'.join(vocab.get_itos()) + '\\n')."
    )
