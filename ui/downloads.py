"""Downloads of what a page shows: the numbers as CSV or NPZ, the whole analysis as JSON.

The bytes are made only when a button is clicked (``st.download_button`` with a callable), so a
512-token analysis (tens of megabytes as JSON) costs nothing until someone asks for it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from transformer import AnalysisResult, LoadedModel
from transformer.cli.export import analysis_bytes


def plain_labels(tokens: list[str], start: int = 0) -> list[str]:
    """'3:the' labels for files (no HTML escaping; the leading digit keeps spreadsheets from
    reading a token such as '=sum' as a formula)."""
    return [f"{start + i}:{tok}" for i, tok in enumerate(tokens)]


def file_stem(*parts: object, text: str = "", words: int = 5) -> str:
    """A file name (without extension) that says what the file holds: ``parts`` (e.g. 'attention',
    'L2', 'H3') then the first ``words`` words of ``text``, lower case, letters, digits and '-' only
    (Korean letters kept), at most 80 characters: 'attention-L2-H3-the-movie-was-not-good'."""
    slug = "-".join(re.findall(r"\w+", text.lower())[:words])
    name = "-".join(str(p) for p in (*parts, slug) if str(p))
    name = re.sub(r"[^\w-]+", "-", name).strip("-_")[:80]
    return name or "download"


def matrix_csv(
    weights: np.ndarray, query_tokens: list[str], key_tokens: list[str], query_start: int = 0, key_start: int = 0
) -> bytes:
    """(Tq, Tk) -> CSV: a header row of key labels, then one row per query with its label first."""
    frame = pd.DataFrame(
        np.asarray(weights, dtype=np.float64),
        index=pd.Index(plain_labels(query_tokens, query_start), name="query \\ key"),
        columns=plain_labels(key_tokens, key_start),
    )
    return frame.to_csv(float_format="%.6g").encode("utf-8")


def arrays_npz(**arrays: np.ndarray) -> bytes:
    """The arrays in one compressed ``.npz`` (read back with ``np.load(path)``)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{name: np.asarray(a) for name, a in arrays.items()})
    return buffer.getvalue()


def analysis_npz(result: AnalysisResult, index: int, **extra: np.ndarray) -> bytes:
    """One input's numbers: attention (L, H, n, n), scores (L, H, n, n), tokens (n,), ids (n,),
    probabilities (K,) with label_names (K,) when the model predicts; for encoder-decoders
    decoder_self_attention (L_d, H, m, m), cross_attention (L_d, H, m, n) and decoder_tokens (m,);
    and any ``extra`` arrays."""
    n = int(result.lengths[index])
    weights = result.input_attention(index)
    arrays = {
        "attention": weights.encoder,
        "scores": result.scores_for(index),
        "tokens": np.array(result.tokens[index], dtype=str),
        "ids": result.ids[index, :n],
    }
    if result.probabilities is not None:
        arrays["probabilities"] = result.probabilities[index]
        arrays["label_names"] = np.array(result.label_names, dtype=str)
    if weights.target is not None:
        arrays["decoder_self_attention"], arrays["cross_attention"] = weights.decoder_self, weights.cross
        arrays["decoder_tokens"] = np.array(weights.target, dtype=str)
    return arrays_npz(**arrays, **extra)


def analysis_json_bytes(loaded: LoadedModel, result: AnalysisResult, index: int) -> bytes:
    """Input ``index`` exactly as ``python -m transformer inspect --format json`` prints it (the same
    writer, ``transformer.export``: the same bytes for the same input, model and length limit)."""
    return analysis_bytes(loaded, result, [index])


def download_row(
    stem: str, files: dict[str, tuple[Callable[[], bytes], str]], key: str, helps: dict[str, str] | None = None
) -> None:
    """One button per file in one wrapping row, each as wide as its label (never cut):
    ``files`` maps a label ('CSV') to (bytes maker, extension); ``helps`` a label to its tooltip."""
    mimes = {"csv": "text/csv", "npz": "application/octet-stream", "json": "application/json"}
    row = st.container(horizontal=True, wrap=True, gap="small")
    for label, (make, ext) in files.items():
        row.download_button(
            label,
            data=make,
            file_name=f"{stem}.{ext}",
            mime=mimes.get(ext, "application/octet-stream"),
            key=f"{key}_{ext}",
            on_click="ignore",
            icon=":material/download:",
            help=(helps or {}).get(label),
            width="content",
        )
