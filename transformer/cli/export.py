"""The one writer of the CLI's JSON format (DESIGN.md), shared by ``inspect`` and the app's downloads.

A document is ``{"model", "device", "inputs": [record, ...]}`` (``--format json``) or one record per
line (``jsonl``). Each record is :meth:`AnalysisResult.input_record` with the task's notes added
here (a translation model's check of its output), so the CLI and a download of the same input are
the same bytes. Numbers are written by orjson: NaN and ±inf become null (JSON has no NaN).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import orjson

from ..analysis.analyze import AnalysisResult, json_ready
from ..analysis.language_check import check_text, model_languages
from ..core.loaded import LoadedModel
from ..translation.checks import translation_record

JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY
# characters that some line readers (Python's str.splitlines, JavaScript) take as line ends
LINE_BREAKS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def model_block(loaded: LoadedModel) -> dict:
    """{"kind", "format", "config", "assumptions", "notes"} describing ``loaded`` (the config as its
    JSON dict; ``assumptions``: each value assumed rather than read, with its source: user,
    checkpoint, family default or vocabulary)."""
    return {
        "kind": loaded.config.kind,
        "format": loaded.format,
        "config": loaded.config.to_dict(),
        "assumptions": dict(loaded.assumptions),
        "notes": list(loaded.notes),
    }


def input_record(
    loaded: LoadedModel, result: AnalysisResult, index: int, attention: bool = True, line: int | None = None
) -> dict:
    """Input ``index`` of ``result`` as one record: its tokens, ids, prediction, attention (layers x
    heads x n x n, no padding; decoder self and cross for encoder-decoders) unless ``attention`` is
    False, ``line`` when it came from a text file, and a translation model's ``translation`` check."""
    return result.input_record(index, attention, line, translation_note(loaded, result, index))


def translation_note(loaded: LoadedModel, result: AnalysisResult, index: int) -> dict | None:
    """The ``translation`` entry for a translation model trained here (its metrics.json names the
    task; None for other models): the output checked only when the model wrote it (not forced)."""
    if result.decoder_tokens is None:
        return None
    task = (loaded.metrics or {}).get("task")
    decoder_tokens = result.decoder_tokens[index]
    return translation_record(
        task, result.tokens[index], result.unknown[index], decoder_tokens, not result.forced_targets
    )


def dumps(value: object) -> bytes:
    """Compact UTF-8 JSON; numpy arrays as nested lists; NaN and ±inf as null; U+0085, U+2028
    and U+2029 escaped so one record stays one line for every reader."""
    data = orjson.dumps(value, option=JSON_OPTIONS)
    for raw, escaped in LINE_BREAKS:
        data = data.replace(raw, escaped)
    return data


def write_document(out: IO[bytes], loaded: LoadedModel, device: str, groups: Iterable[list[dict]], fmt: str) -> int:
    """Write ``groups`` of records to ``out`` (a binary stream) as each group comes, flushing after
    each; returns how many records. ``fmt`` 'json': one object {"model", "device", "inputs": [...]}
    ending in a newline; 'jsonl': one record per line."""
    count = 0
    if fmt == "json":
        out.write(dumps({"model": model_block(loaded), "device": device})[:-1] + b',"inputs":[')
    for group in groups:
        for record in group:
            if fmt == "json":
                out.write((b"," if count else b"") + dumps(record))
            else:
                out.write(dumps(record) + b"\n")
            count += 1
        out.flush()
    if fmt == "json":
        out.write(b"]}\n")
    out.flush()
    return count


def finished_record(loaded: LoadedModel, record: dict, languages: tuple[str, ...]) -> dict:
    """A record as the CLI and the pages' downloads write it: its ``language`` check added (a dates model reads
    numbers as words), and an imported model's ``tokens`` as its tokenizer's own strings (``Ġmovie``, ``##ing``;
    the readable ``␣movie`` belongs to the pages), one per id."""
    numbers = loaded.config.tokenizer == "digits"
    record = {**record, "language": check_text(record["text"], languages, numbers).record()}
    encoder = getattr(loaded, "encoder", None)
    if encoder is None or "ids" not in record:
        return record
    return {**record, "tokens": [encoder.tokenizer.id_to_token(int(i)) for i in record["ids"]]}


def finished_records(loaded: LoadedModel, result: AnalysisResult, chosen, folder=None) -> list[dict]:
    languages = model_languages(loaded.metrics, folder)
    return [finished_record(loaded, input_record(loaded, result, i), languages) for i in chosen]


def analysis_bytes(
    loaded: LoadedModel, result: AnalysisResult, indices: list[int] | None = None, folder: str | Path | None = None
) -> bytes:
    """``result`` as ``inspect --format json`` prints it (the same bytes, for the same inputs).

    indices: which inputs to include (default: all, in order); folder: the model's folder (where its languages
    may be written, as the CLI's ``--checkpoint``)."""
    chosen = range(len(result.texts)) if indices is None else indices
    buffer = io.BytesIO()
    write_document(buffer, loaded, result.device, [finished_records(loaded, result, chosen, folder)], "json")
    return buffer.getvalue()


def analysis_json(loaded: LoadedModel, result: AnalysisResult, indices: list[int] | None = None) -> str:
    """:func:`analysis_bytes` as text (UTF-8 kept as is, not \\u-escaped)."""
    return analysis_bytes(loaded, result, indices).decode("utf-8")


def analysis_document(
    loaded: LoadedModel, result: AnalysisResult, indices: list[int] | None = None, folder: str | Path | None = None
) -> dict:
    """{"model", "device", "inputs"}: what :func:`analysis_bytes` writes, as plain Python values
    (nested lists; None for NaN and ±inf) for ``json.dumps`` or a notebook."""
    chosen = range(len(result.texts)) if indices is None else indices
    return {
        "model": model_block(loaded),
        "device": result.device,
        "inputs": [json_ready(r) for r in finished_records(loaded, result, chosen, folder)],
    }
