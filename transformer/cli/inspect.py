"""``inspect``'s records, streamed: inputs are read as they come, run in length-sorted batches
inside windows of consecutive inputs, and written in input order as each window is done.

Memory is bounded by one window (a few batches) whatever the number of inputs. With
``attention="none"`` a classifier runs the fast path without attention weights; otherwise
every record carries its input's attention (layers x heads x n x n) as DESIGN.md shows.
Each input is tokenised once (the window's budget and the analysis read the same ids); records
and the document around them are made and written by ``transformer.export``, as the app's downloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import torch

from ..analysis.analyze import analyze_encoded, calibration_temperature, model_device, prediction_entry, weights_warning
from ..analysis.language_check import model_languages
from ..core.inputs import EncodedInputs
from ..core.loaded import LoadedModel
from ..core.tokenizer import Encoded
from ..lm.inspect import lm_record
from ..residual.records import residual_entries
from ..text.predict import _logits, token_limit
from .export import finished_record, input_record, write_document

WINDOW_INPUTS = {"none": 512, "all": 64}
# attention cells (batch x layers x heads x T x T) of one batch / one window: ~128 MB / ~512 MB of float32
BATCH_CELLS = 32_000_000
WINDOW_CELLS = 128_000_000
FAST_BATCH_TOKENS = 16_384  # tokens per batch on the fast path (no weights kept)
MAX_BATCH = 64


@dataclass(frozen=True)
class Input:
    """One input: its text, its position among the inputs (0-based) and, from a file, its 1-based
    line number."""

    text: str
    index: int
    line: int | None = None


def file_inputs(path: str | Path) -> Iterator[Input]:
    """The lines of a UTF-8 file, split on ``\\n`` and ``\\r\\n`` only (never on U+0085, U+2028 or
    form feeds, which occur inside reviews); blank lines are skipped. Raises ValueError at once
    (before any input is read) for a missing file or bytes that are not UTF-8."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"--text-file {path.name} is a folder: give a text file, one input per line.")
    if not path.is_file():
        raise ValueError(f"--text-file {path}: no such file.")
    _check_utf8(path)
    return _lines(path)


def _lines(path: Path) -> Iterator[Input]:
    index = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):  # binary mode splits on b"\n" only
            text = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
            if text.strip():
                yield Input(text, index, number)
                index += 1


def _check_utf8(path: Path) -> None:
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(
                    f"--text-file {path.name} is not UTF-8 text ({err.reason} on line {number}): save it as UTF-8."
                ) from err


def windows(loaded: LoadedModel, inputs: Iterable[Input], attention: str, limit: int) -> Iterator[list]:
    """Consecutive (Input, Encoded) pairs, cut when a window holds enough inputs or attention cells."""
    encoder, cfg = loaded.text_encoder(), loaded.config
    cells_per_token2 = max(1, cfg.num_layers * cfg.num_heads)
    window, cells = [], 0
    for item in inputs:
        encoded = encoder.encode(item.text, limit, cfg.add_cls_token)
        window.append((item, encoded))
        cells += len(encoded.ids) ** 2 * cells_per_token2
        if len(window) >= WINDOW_INPUTS[attention] or (attention == "all" and cells >= WINDOW_CELLS):
            yield window
            window, cells = [], 0
    if window:
        yield window


def batches(lengths: list[int], attention: str, per_token2: int) -> list[list[int]]:
    """Indices sorted by length, grouped so one batch stays within its token or cell budget."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    for i in order:
        longest = max(1, lengths[i])
        size = len(out[-1]) + 1 if out else 1
        if attention == "all":
            fits = size * longest * longest * per_token2 <= BATCH_CELLS
        else:
            fits = size * longest <= FAST_BATCH_TOKENS
        if out and fits and size <= MAX_BATCH:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def window_records(
    loaded: LoadedModel,
    window: list,
    attention: str,
    max_len: int | None,
    targets: list[str] | None,
    calibration: str = "temperature",
) -> list[dict]:
    """One record per input of the window, in input order."""
    records: list[dict | None] = [None] * len(window)
    cfg = loaded.config
    runnable = [i for i, (_, e) in enumerate(window) if e.original_length > int(cfg.add_cls_token)]
    for i in set(range(len(window))) - set(runnable):
        records[i] = empty_record(*window[i])
    lengths = [len(window[i][1].ids) for i in runnable]
    for batch in batches(lengths, attention, max(1, cfg.num_layers * cfg.num_heads)):
        rows = [runnable[j] for j in batch]
        if attention == "none" and cfg.kind == "classifier" and cfg.has_head:
            made = fast_records(loaded, [window[r] for r in rows], calibration)
        else:
            made = analysis_records(loaded, [window[r] for r in rows], attention, max_len, targets, calibration)
        for row, record in zip(rows, made):
            records[row] = record
    return records


def _base(item: Input, encoded: Encoded) -> dict:
    record = {"text": item.text}
    if item.line is not None:
        record["line"] = item.line
    record.update(
        tokens=encoded.tokens,
        ids=encoded.ids,
        truncated=encoded.truncated,
        unknown=encoded.unknown,
    )
    return record


def empty_record(item: Input, encoded: Encoded) -> dict:
    return {**_base(item, encoded), "prediction": None, "error": "This input has no words: nothing was run."}


def prediction(
    names: list[str], probs: np.ndarray, raw: np.ndarray | None = None, temperature: float = 1.0
) -> tuple[dict | None, list[str]]:
    """({'label', 'probabilities', 'raw_probabilities', 'temperature'} or None, warnings): None when
    the probabilities are not finite. ``probs`` are the calibrated ones, ``raw`` softmax(logits)."""
    entry = prediction_entry(names, probs, raw, temperature)
    if entry is None:
        return None, ["The model's probabilities are NaN or infinite (non-finite weights?): no prediction."]
    return entry, []


def fast_records(loaded: LoadedModel, items: list, calibration: str = "temperature") -> list[dict]:
    """Records without attention: one forward of the fused fast path."""
    logits = torch.from_numpy(_logits(loaded, [e.ids for _, e in items], model_device(loaded)))
    temperature = calibration_temperature(loaded, calibration)
    raw = torch.softmax(logits, dim=-1).numpy()  # _logits gives [0, z] for a single logit: softmax = sigmoid
    probs = torch.softmax(logits / temperature, dim=-1).numpy()
    names = list(loaded.config.label_names)
    out = []
    for (item, encoded), p, r in zip(items, probs, raw):
        pred, warnings = prediction(names, p, r, temperature)
        record = {**_base(item, encoded), "prediction": pred}
        if warnings or loaded.nonfinite_weights:
            record["warnings"] = warnings + _weight_warning(loaded)
        out.append(record)
    return out


def _weight_warning(loaded: LoadedModel) -> list[str]:
    bad = loaded.nonfinite_weights
    return [weights_warning(bad)] if bad else []


def analysis_records(
    loaded: LoadedModel,
    items: list,
    attention: str,
    max_len: int | None,
    targets: list[str] | None,
    calibration: str = "temperature",
) -> list[dict]:
    """Records from one analysis of the (Input, Encoded) ``items`` as the window tokenised them
    (attention kept unless ``attention`` is 'none')."""
    if targets is not None and any(item.index >= len(targets) for item, _ in items):
        raise ValueError(f"Give one --target per input: there are more inputs than the {len(targets)} targets.")
    chosen = None if targets is None else [targets[item.index] for item, _ in items]
    inputs = EncodedInputs([item.text for item, _ in items], [e for _, e in items], token_limit(loaded, max_len))
    result = analyze_encoded(loaded, inputs, chosen, calibration)
    keep = attention == "all"
    return [input_record(loaded, result, j, keep, item.line) for j, (item, _) in enumerate(items)]


def lm_input_record(loaded: LoadedModel, item: Input, attention: str, limit: int) -> dict:
    """A decoder-only language model's record: tokens, causal attention, the top next tokens."""
    imported = getattr(loaded, "encoder", None) is not None  # a Hugging Face folder: its tokenizer's own ids
    record = lm_record(loaded.model, loaded.lm_tokenizer, item.text, attention == "all", limit, own_tokens=imported)
    if item.line is not None:
        record = {"text": record.pop("text"), "line": item.line, **record}
    return record


def write_records(
    out: IO[bytes],
    loaded: LoadedModel,
    inputs: Iterable[Input],
    fmt: str,
    attention: str,
    max_len: int | None,
    targets: list[str] | None,
    calibration: str = "temperature",
    folder: str | Path | None = None,
    residual: tuple[bool, bool] = (False, False),
) -> int:
    """Write every input's record to ``out`` (a binary stream) as it is ready; returns how many.

    ``fmt`` 'json': one object {"model", "device", "inputs": [...]}; 'jsonl': one record per line.
    ``calibration`` 'temperature': probabilities at the model's fitted temperature (raw ones beside
    them), 'none': the raw softmax. Every record says whether its text is in a language the model
    reads (``language``; the model's languages from its metrics or ``folder``). ``residual``: (lens,
    contributions) adds those entries (transformer.residual.records)."""
    limit = token_limit(loaded, max_len)
    if loaded.config.kind == "language-model":
        groups = ([lm_input_record(loaded, item, attention, limit)] for item in inputs)
    else:
        groups = (
            window_records(loaded, w, attention, max_len, targets, calibration)
            for w in windows(loaded, inputs, attention, limit)
        )
    languages = model_languages(loaded.metrics, folder)
    checked = ([finished_record(loaded, r, languages) for r in group] for group in groups)
    if any(residual):
        checked = ([residual_entries(loaded, r, *residual) for r in group] for group in checked)
    return write_document(out, loaded, str(model_device(loaded)), checked, fmt)
