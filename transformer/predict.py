"""Batch prediction: many texts at once, no attention weights (the fused fast path).

Texts are sorted by length and run in batches of similar lengths, so little time goes to
padding. Inputs with no words are skipped and reported, never an error::

    from transformer import load_model
    from transformer.predict import predict_batch
    batch = predict_batch(load_model("assets/models/imdb-sentiment"), ["great film", "dull"])
    batch.rows()   # [{'line': 1, 'text': 'great film', 'label': ..., 'probability': ...}, ...]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .analysis import _precision_context, model_device, pad_ids
from .bundle import LoadedModel
from .tokenizer import Encoded, TextEncoder

# A callback told (inputs done, inputs in all) after every batch: a progress bar, tqdm, a log line.
Progress = Callable[[int, int], None]
MAX_FILE_BYTES = 2_000_000
MAX_FILE_LINES = 5_000


@dataclass(frozen=True)
class Prediction:
    """One input's prediction. index: its position in the texts given; probability: of ``label``;
    probabilities (K labels,); num_tokens: what the model saw (after truncation, class token included)."""

    index: int
    text: str
    label: str
    probability: float
    probabilities: np.ndarray
    num_tokens: int
    truncated: bool


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
                "label": p.label,
                "probability": round(p.probability, 4),
                **{f"p({name})": round(float(q), 4) for name, q in zip(self.label_names, p.probabilities)},
                "tokens": p.num_tokens,
                "truncated": p.truncated,
            }
            for p in self.predictions
        ]


def token_limit(loaded: LoadedModel, max_len: int | None) -> int:
    """The truncation length ``analyze`` uses: ``max_len``, else the model's default, at most its max_len."""
    cfg = loaded.config
    limit = min(max_len or cfg.default_max_tokens or cfg.max_len, cfg.max_len)
    if limit < 1:
        raise ValueError("The maximum length must be at least 1 token.")
    return limit


def _has_words(encoded: Encoded, add_cls: bool) -> bool:
    return encoded.original_length > int(add_cls)


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of at most ``batch_size``, shortest inputs first (little padding)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


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


def _probabilities(loaded: LoadedModel, seqs: list[list[int]], device: torch.device) -> np.ndarray:
    """Lists of ids -> (B, labels) probabilities (the model's own, temperature 1)."""
    logits = torch.from_numpy(_logits(loaded, seqs, device))
    return torch.softmax(logits, dim=-1).numpy()


def predict_logits(
    loaded: LoadedModel, texts: Sequence[str], max_len: int | None = None, batch_size: int = 64
) -> np.ndarray:
    """(N, K) float32 logits for every text, in input order (batched by length; an input with no
    words is run as one ``<unk>``). For calibration and evaluation on whole data splits."""
    cfg, limit = loaded.config, token_limit(loaded, max_len)
    encoded = TextEncoder(loaded.vocab).encode_batch(list(texts), limit, cfg.add_cls_token)
    seqs = [e.ids or [loaded.vocab.unk_id] for e in encoded]
    device = model_device(loaded)
    out: np.ndarray | None = None
    for rows in length_batches([len(s) for s in seqs], batch_size):
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
    if loaded.config.kind != "classifier":
        raise ValueError("Batch prediction needs a classifier; this model is an encoder-decoder.")
    if loaded.model.training:
        raise ValueError("predict_batch() needs a model in eval mode (call model.eval() once after loading).")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}.")
    cfg, limit = loaded.config, token_limit(loaded, max_len)
    encoded = TextEncoder(loaded.vocab).encode_batch(list(texts), limit, cfg.add_cls_token)
    kept = [i for i, e in enumerate(encoded) if _has_words(e, cfg.add_cls_token)]
    probs: dict[int, np.ndarray] = {}
    device = model_device(loaded)
    done = 0
    for batch in length_batches([len(encoded[i].ids) for i in kept], batch_size):
        rows = [kept[j] for j in batch]
        for i, p in zip(rows, _probabilities(loaded, [encoded[i].ids for i in rows], device)):
            probs[i] = p
        done += len(rows)
        if progress is not None:
            progress(done, len(kept))
    names = list(cfg.label_names)
    predictions = [_prediction(i, texts[i], encoded[i], probs[i], names) for i in kept]
    skipped = [i for i in range(len(encoded)) if i not in probs]
    return BatchPrediction(predictions, skipped, names, limit)


def _prediction(index: int, text: str, encoded: Encoded, probs: np.ndarray, names: list[str]) -> Prediction:
    best = int(probs.argmax())
    return Prediction(index, text, names[best], float(probs[best]), probs, len(encoded.ids), encoded.truncated)


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
    lines = text.splitlines()
    kept = [line.strip() for line in lines if line.strip()]
    if not kept:
        raise ValueError("The file has no text: put one sentence per line.")
    if len(kept) > max_lines:
        raise ValueError(f"The file has {len(kept):,} lines; the limit is {max_lines:,}. Split it into smaller files.")
    return kept, len(lines) - len(kept)
