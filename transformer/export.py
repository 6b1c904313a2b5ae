"""The analysis as one JSON-ready object in the CLI format of DESIGN.md (shared by the CLI and the app)."""

from __future__ import annotations

import json

from .analysis import AnalysisResult
from .bundle import LoadedModel


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


def analysis_document(loaded: LoadedModel, result: AnalysisResult, indices: list[int] | None = None) -> dict:
    """{"model", "device", "inputs"}: ``result`` in the CLI's ``inspect --format json`` shape.

    indices: which inputs to include (default: all, in order). Each input holds its tokens,
    ids, prediction and attention (layers x heads x n x n, no padding) as ``input_json`` gives.
    """
    chosen = range(len(result.texts)) if indices is None else indices
    return {
        "model": model_block(loaded),
        "device": result.device,
        "inputs": [result.input_json(i) for i in chosen],
    }


def analysis_json(loaded: LoadedModel, result: AnalysisResult, indices: list[int] | None = None) -> str:
    """:func:`analysis_document` as compact JSON text (UTF-8 kept as is, not \\u-escaped)."""
    return json.dumps(analysis_document(loaded, result, indices), ensure_ascii=False)
