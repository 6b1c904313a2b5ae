"""Batch prediction: many texts at once, no attention weights (the fused fast path).

Texts are sorted by length and run in batches of similar lengths, so little time goes to
padding. Inputs with no words are skipped and reported, never an error::

    from transformer import load_model
    from transformer.text.predict import predict_batch
    batch = predict_batch(load_model("assets/models/imdb-sentiment"), ["great film", "dull"])
    batch.rows()   # [{'line': 1, 'text': 'great film', 'label': ..., 'probability': ...}, ...]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..analysis.analyze import _precision_context, model_device, pad_ids
from ..analysis.lm_inputs import token_limit
from ..core.inputs import EncodedInputs
from ..core.loaded import LoadedModel
from ..core.tokenizer import Encoded

# A callback told (inputs done, inputs in all) after every batch: a progress bar, tqdm, a log line.
Progress = Callable[[int, int], None]
MAX_FILE_BYTES = 2_000_000
MAX_FILE_LINES = 5_000
# A batch holds at most this many attention cells (inputs × longest²): 4 inputs of 1,024 tokens,
# 64 of 256; the transient (B, H, T, T) weights of one batch stay near 64 MB for 4 heads.
MAX_BATCH_CELLS = 1 << 22


@dataclass(frozen=True)
class Prediction:
    """One input's prediction. index: its position in the texts given; probability: of ``label``;
    probabilities (K labels,): the model's own softmax; logits (K,) (a single-logit model's z as
    [0, z]); num_tokens: what the model saw (after truncation, class token included); tokens and
    unknown: those tokens and which became ``<unk>``; original_length: tokens before truncation.
    A model whose output is NaN or infinite gives ``finite`` False and an empty ``label``."""

    index: int
    text: str
    label: str
    probability: float
    probabilities: np.ndarray
    num_tokens: int
    truncated: bool
    logits: np.ndarray | None = None
    tokens: tuple[str, ...] = ()
    unknown: tuple[bool, ...] = ()
    original_length: int = 0

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.probabilities).all())


@dataclass(frozen=True)
class BatchPrediction:
    """Predictions in input order; ``skipped`` holds the indices of inputs with no words."""

    predictions: list[Prediction]
    skipped: list[int]
    label_names: list[str]
    max_len: int

    def rows(self) -> list[dict]:
        """One dict per prediction (1-based ``line``), ready for a table or a CSV file."""
        return [
            {
                "line": p.index + 1,
                "text": p.text,
                "label": p.label if p.finite else None,
                "probability": round(p.probability, 4) if p.finite else None,
                **{f"p({name})": _rounded(q) for name, q in zip(self.label_names, p.probabilities)},
                "tokens": p.num_tokens,
                "truncated": p.truncated,
            }
            for p in self.predictions
        ]


def _rounded(value: float) -> float | None:
    return round(float(value), 4) if np.isfinite(value) else None


def _has_words(encoded: Encoded, add_cls: bool) -> bool:
    return encoded.original_length > int(add_cls)


def length_batches(lengths: Sequence[int], batch_size: int, max_cells: int | None = None) -> list[list[int]]:
    """Indices grouped into batches, shortest inputs first (little padding): at most ``batch_size``
    inputs, and at most ``max_cells`` attention cells (inputs × longest length²) unless one input
    alone has more."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    for i in order:
        longest = max(1, lengths[i])  # sorted: the newest input is the batch's longest
        full = batches and (
            len(batches[-1]) >= batch_size
            or (max_cells is not None and (len(batches[-1]) + 1) * longest**2 > max_cells)
        )
        if not batches or full:
            batches.append([])
        batches[-1].append(i)
    return batches


@torch.inference_mode()
def _logits(loaded: LoadedModel, seqs: list[list[int]], device: torch.device) -> np.ndarray:
    """Lists of ids -> (B, K) float32 logits, one forward without attention weights.

    A single-logit model's z becomes the two logits [0, z] (their softmax is [1 − σ(z), σ(z)])."""
    ids = pad_ids(seqs, loaded.config.pad_id).to(device)
    context, _ = _precision_context(loaded, device)
    with context:
        logits = loaded.model(ids).logits.float()
    if loaded.config.single_logit:
        logits = torch.cat([torch.zeros_like(logits), logits], dim=-1)
    return logits.cpu().numpy()


def predict_logits(
    loaded: LoadedModel, texts: Sequence[str], max_len: int | None = None, batch_size: int = 64
) -> np.ndarray:
    """(N, K) float32 logits for every text, in input order (batched by length; an input with no
    words is run as one ``<unk>``). For calibration and evaluation on whole data splits."""
    cfg, limit = loaded.config, token_limit(loaded, max_len)
    encoded = loaded.text_encoder().encode_batch(list(texts), limit, cfg.add_cls_token)
    seqs = [e.ids or [loaded.vocab.unk_id] for e in encoded]
    device = model_device(loaded)
    out: np.ndarray | None = None
    for rows in length_batches([len(s) for s in seqs], batch_size, MAX_BATCH_CELLS):
        logits = _logits(loaded, [seqs[i] for i in rows], device)
        if out is None:
            out = np.zeros((len(seqs), logits.shape[1]), dtype=np.float32)
        out[rows] = logits
    return out if out is not None else np.zeros((0, max(2, cfg.num_labels)), dtype=np.float32)


def predict_batch(
    loaded: LoadedModel,
    texts: Sequence[str],
    max_len: int | None = None,
    batch_size: int = 64,
    progress: Progress | None = None,
) -> BatchPrediction:
    """Predict a label for every text. max_len: truncation (default: the model's chosen length).

    Texts with no words are listed in ``skipped``. ``progress(done, total)`` is called after each batch.
    """
    _check_predictable(loaded, batch_size)
    limit = token_limit(loaded, max_len)
    encoded = loaded.text_encoder().encode_batch(list(texts), limit, loaded.config.add_cls_token)
    return predict_encoded(loaded, EncodedInputs(list(texts), encoded, limit), batch_size, progress)


def predict_encoded(
    loaded: LoadedModel, inputs: EncodedInputs, batch_size: int = 64, progress: Progress | None = None
) -> BatchPrediction:
    """:func:`predict_batch` of texts already tokenised (inputs with no words allowed: they are skipped),
    so a caller that budgeted them runs the same ids."""
    _check_predictable(loaded, batch_size)
    cfg, texts, encoded = loaded.config, inputs.texts, inputs.encoded
    kept = [i for i, e in enumerate(encoded) if _has_words(e, cfg.add_cls_token)]
    logits: dict[int, np.ndarray] = {}
    device = model_device(loaded)
    done = 0
    for batch in length_batches([len(encoded[i].ids) for i in kept], batch_size, MAX_BATCH_CELLS):
        rows = [kept[j] for j in batch]
        for i, z in zip(rows, _logits(loaded, [encoded[i].ids for i in rows], device)):
            logits[i] = z
        done += len(rows)
        if progress is not None:
            progress(done, len(kept))
    names = list(cfg.label_names)
    predictions = [_prediction(i, texts[i], encoded[i], logits[i], names) for i in kept]
    skipped = [i for i in range(len(encoded)) if i not in logits]
    return BatchPrediction(predictions, skipped, names, inputs.limit)


def _check_predictable(loaded: LoadedModel, batch_size: int) -> None:
    if loaded.config.kind != "classifier":
        raise ValueError("Batch prediction needs a classifier; this model is an encoder-decoder.")
    if loaded.model.training:
        raise ValueError("predict_batch() needs a model in eval mode (call model.eval() once after loading).")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}.")


def _prediction(index: int, text: str, encoded: Encoded, logits: np.ndarray, names: list[str]) -> Prediction:
    probs = torch.softmax(torch.from_numpy(logits), dim=-1).numpy()
    finite = bool(np.isfinite(probs).all())
    best = int(probs.argmax()) if finite else 0
    return Prediction(
        index,
        text,
        names[best] if finite else "",
        float(probs[best]),
        probs,
        len(encoded.ids),
        encoded.truncated,
        logits,
        tuple(encoded.tokens),
        tuple(encoded.unknown),
        encoded.original_length,
    )


def read_lines(data: bytes, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_FILE_LINES) -> tuple[list[str], int]:
    """The non-blank lines (stripped) of an uploaded text file and how many blank lines were dropped.

    Raises ValueError with a message for the user when the file is larger than ``max_bytes``,
    has more than ``max_lines`` non-blank lines, is not UTF-8 text, or has no text at all.
    """
    if len(data) > max_bytes:
        raise ValueError(f"The file has {len(data):,} bytes; the limit is {max_bytes:,}. Split it into smaller files.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"The file is not UTF-8 text (byte {err.start} cannot be read). Save it as UTF-8 and upload it again."
        ) from err
    body = text[:-1] if text.endswith("\n") else text  # a final newline ends the last line, adds none
    lines = [line.removesuffix("\r") for line in body.split("\n")]  # U+0085, U+2028, \f… stay in their line
    kept = [line.strip() for line in lines if line.strip()]
    if not kept:
        raise ValueError("The file has no text: put one sentence per line.")
    if len(kept) > max_lines:
        raise ValueError(f"The file has {len(kept):,} lines; the limit is {max_lines:,}. Split it into smaller files.")
    return kept, len(lines) - len(kept)
