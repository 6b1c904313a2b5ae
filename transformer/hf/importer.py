"""Open a Hugging Face model folder in our engine: config, family row, sizes, shapes, tokenizer,
then (only when all of that fits) the weights through the isolated reader, mapped and loaded.

Order of the checks, each a :class:`CheckpointError` (the ones a user meets a :class:`CodedError`) naming the file and what to do: config.json
(JSON, model_type supported, sizes within the app's caps), the weight files (present, shards
complete, sizes on disk), the shapes in the safetensors headers against what the config implies
(a config that lies about sizes is caught here, before any tensor is read), the tokenizer against
the embedding's rows; then the tensors are read (``pytorch_model.bin`` with
``torch.load(weights_only=True)`` in a child process) and their shapes checked again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from torch import nn

from ..bundle import METRICS_FILE, nonfinite_note, nonfinite_tensors
from ..checkpoints.errors import CodedError
from ..core.decoder import DecoderLM
from ..core.masked_lm import MaskedLanguageModel
from ..core.model import SequenceClassifier
from .families import family_for, importer_of
from .folder import (
    CONFIG_FILE,
    DOWNLOAD_HINT,
    MAX_WEIGHTS_MB,
    check_sizes,
    header_shapes,
    read_hf_config,
    read_json,
    read_weights,
    weight_files,
)
from .loaded import FORMAT, ImportedModel
from .mapping import LANGUAGE_MODEL, MASKED_LM, SEQUENCE_CLASSIFICATION, Imported
from .text import HFTextEncoder, PieceVocab, piece_info
from .tokenizer_files import load_tokenizer

PREPROCESSOR_FILE = "preprocessor_config.json"
SOURCE_SPM = "source.spm"  # a Marian folder's SentencePiece model of the source language (as in .spm)
TIED = {"mlm_head.decoder.weight": "encoder.embedding.tokens.weight", "output.weight": "embedding.tokens.weight"}


def load_hf_folder(folder: str | Path, device: str | torch.device = "cpu", max_mb: float = MAX_WEIGHTS_MB):
    """A Hugging Face model folder as a :class:`LoadedModel` on ``device`` in eval mode."""
    folder = Path(folder)
    hf = read_hf_config(folder)
    family = family_for(hf)
    files = weight_files(folder)
    check_sizes(files, max_mb)
    convert = importer_of(family)
    if family.external:  # ViT, Marian: their importers build the model themselves
        extras = {"name": folder.name}
        if family.model_type == "vit" and (folder / PREPROCESSOR_FILE).is_file():
            extras["preprocessor"] = read_json(folder / PREPROCESSOR_FILE)
        if family.model_type == "marian" and (folder / SOURCE_SPM).is_file():
            from .spm import MarianTokenizer  # sentencepiece is needed for Marian folders only

            extras["tokenizer"] = MarianTokenizer.from_folder(folder)
        return convert(hf, read_weights(files, max_mb), **extras)
    shapes = header_shapes(files)
    if shapes is not None:  # safetensors: every shape checked before a tensor is read
        check_fits(convert(hf, _meta(shapes), files.names), files.names)
    tokenizer, specials, tokenizer_file = load_tokenizer(folder, family.model_type)
    weights = read_weights(files, max_mb)
    imported = with_tokenizer_padding(convert(hf, weights, files.names), tokenizer, specials)
    metrics = read_metrics(folder)
    imported = with_temperature(imported, metrics)
    with torch.device("meta"):  # no random weights to draw and then overwrite: every parameter is the file's
        model = build(imported)
    check_fits(imported, files.names, model)
    model = with_weights(model, imported.state)
    encoder = _encoder(tokenizer, specials, imported, tokenizer_file, files.names)
    bad = nonfinite_tensors(imported.state)
    notes = imported.notes + ((nonfinite_note(bad),) if bad else ())
    return ImportedModel(
        model.to(device).eval(),
        imported.config,
        encoder.vocab,
        None,
        folder.name,
        FORMAT,
        metrics,
        (f"{family.title} read from {folder.name}: {files.names}, tokenizer from {tokenizer_file}.",) + notes,
        nonfinite_weights=bad,
        lm_tokenizer=tokenizer if imported.head == LANGUAGE_MODEL else None,
        encoder=encoder,
        family=family.title,
        head=imported.head,
        sources={"config": CONFIG_FILE, "weights": files.names, "tokenizer": tokenizer_file},
    )


def with_tokenizer_padding(imported: Imported, tokenizer, specials: dict[str, str]) -> Imported:
    """The pad id the tokenizer pads with, in place of config.json's ``pad_token_id``: they differ in published
    folders (multilingual-e5-small: config 0 is ``<s>``, the XLM-R tokenizer pads with ``<pad>`` = 1), and
    masking ``<s>`` would change every attention row. A tokenizer without a pad token (GPT-2) keeps the config's."""
    pad = specials.get("pad_token")
    pad_id = tokenizer.token_to_id(pad) if isinstance(pad, str) else None
    if pad_id is None or pad_id == imported.config.pad_id or pad_id >= imported.config.vocab_size:
        return imported
    return dataclasses.replace(imported, config=imported.config.replace(pad_id=pad_id))


def read_metrics(folder: Path) -> dict | None:
    """metrics.json beside the weights (the folders this project trains write one), else None."""
    path = folder / METRICS_FILE
    if not path.is_file() or path.stat().st_size > 4 * 1024**2:
        return None
    try:
        data = read_json(path)
    except Exception:  # noqa: BLE001 - a foreign folder's broken metrics.json is ignored, not fatal
        return None
    return data if isinstance(data, dict) else None


def with_temperature(imported: Imported, metrics: dict | None) -> Imported:
    """The temperature fitted on validation (metrics.json ``calibration.temperature``) on a classifier head."""
    calibration = (metrics or {}).get("calibration")
    value = calibration.get("temperature") if isinstance(calibration, dict) else None
    if imported.head != SEQUENCE_CLASSIFICATION or not isinstance(value, (int, float)) or not 0.05 <= value <= 20:
        return imported
    return dataclasses.replace(imported, config=imported.config.replace(temperature=float(value)))


def with_weights(model: nn.Module, state: dict[str, torch.Tensor]) -> nn.Module:
    """``model`` (built on the meta device) holding ``state``'s tensors as its parameters, each in the
    parameter's dtype (a float16 or bfloat16 file becomes float32) and contiguous; a tied weight (the output
    layer and the token embedding) stays one tensor. Raises as ``load_state_dict`` (strict) does."""
    converted: dict[int, torch.Tensor] = {}  # one converted copy per source tensor
    full = {}
    for ours, like in model.state_dict().items():
        source = state.get(ours, state.get(TIED.get(ours, ""), None))
        if source is not None:  # a missing one is reported by load_state_dict (strict)
            key = id(source)
            if key not in converted:
                converted[key] = source.detach().to(dtype=like.dtype).contiguous()
            full[ours] = converted[key]
    tied = _tied_names(model)
    model.load_state_dict(full, assign=True)
    for first, others in tied.items():
        for name in others:  # assign gave each name a Parameter of its own: one again, as built
            owner, _, attr = name.rpartition(".")
            setattr(model.get_submodule(owner), attr, model.get_parameter(first))
    return model


def _tied_names(model: nn.Module) -> dict[str, list[str]]:
    """{first name: [other names]} of each parameter that several modules share (a tied output layer)."""
    names: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return {group[0]: group[1:] for group in names.values() if len(group) > 1}


def build(imported: Imported) -> nn.Module:
    """The module the imported config and head describe (random weights until loaded)."""
    if imported.head == LANGUAGE_MODEL:
        return DecoderLM(imported.config)
    if imported.head == MASKED_LM:
        return MaskedLanguageModel(imported.config, imported.mlm_activation, imported.mlm_width, imported.mlm_tied)
    return SequenceClassifier(imported.config)


def check_fits(imported: Imported, files: str, model: nn.Module | None = None) -> None:
    """The mapped tensors' shapes against the module the config describes (built on the meta device,
    so nothing is allocated); CheckpointError naming their tensor and the config's shape."""
    if model is None:
        with torch.device("meta"):
            model = build(imported)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    for ours, shape in expected.items():
        got = imported.state.get(ours, imported.state.get(TIED.get(ours, ""), None))
        if got is None:
            raise CodedError(
                "missing_tensor", f"{files} lacks the weights of {ours}: {DOWNLOAD_HINT}.", file=files, tensor=ours
            )
        if tuple(got.shape) != shape:
            theirs = imported.sources.get(ours, ours)
            message = (
                f"{files} holds {theirs} of shape {tuple(got.shape)}, but {CONFIG_FILE} describes {shape}: the "
                f"config does not belong to these weights (its sizes are wrong). Keep the {CONFIG_FILE} saved "
                "with the weights."
            )
            values = {"file": files, "tensor": theirs, "shape": str(tuple(got.shape)), "expected": str(shape)}
            raise CodedError("config_mismatch", message, **values)


def _meta(shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    return {name: torch.empty(shape, device="meta") for name, shape in shapes.items()}


def _encoder(tokenizer, specials: dict[str, str], imported: Imported, tokenizer_file: str, files: str):
    """The text encoder, its vocabulary one token per embedding row; CheckpointError when the
    tokenizer gives ids the embedding has no row for."""
    rows = imported.config.vocab_size
    table = tokenizer.get_vocab(with_added_tokens=True)
    largest = max(table.values(), default=-1)
    if largest >= rows:
        message = (
            f"{tokenizer_file} has {largest + 1:,} tokens but the token embedding in {files} has {rows:,} rows: the "
            "tokenizer belongs to another model. Keep the tokenizer files downloaded with these weights."
        )
        raise CodedError(
            "tokenizer_mismatch", message, file=tokenizer_file, tokens=f"{largest + 1:,}", rows=f"{rows:,}"
        )
    itos = [f"[row {i}]" for i in range(rows)]  # rows no token maps to (a table padded past the tokenizer)
    for token, index in table.items():
        itos[index] = token
    unk = specials.get("unk_token") if specials.get("unk_token") in table else itos[0]
    pad = specials.get("pad_token") if specials.get("pad_token") in table else itos[imported.config.pad_id]
    vocab = PieceVocab(itos, unk, pad)
    return HFTextEncoder(tokenizer, vocab, piece_info(tokenizer, specials))
