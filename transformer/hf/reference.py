"""The imported model against the reference implementation on one short sentence: the largest
difference of every layer's and head's attention weight, and of the logits, against ``transformers``
(eager attention, ``output_attentions=True``; with its default ``sdpa`` attention it returns no weights).

``transformers`` is a development dependency: where it is not installed, :func:`reference_available`
is False and nothing is compared.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from .folder import CONFIG_FILE
from .mapping import LANGUAGE_MODEL, MASKED_LM

CHECK_TEXT = "the movie was great"


@dataclass(frozen=True)
class ReferenceCheck:
    """``attention``: the largest |ours − theirs| over every layer, head, query and key; ``per_layer``:
    the same per layer; ``logits``: the largest difference of the logits (None for a bare encoder);
    ``reference``: the ``transformers`` class compared with; ``tokens``: the sentence's length in tokens."""

    text: str
    reference: str
    tokens: int
    attention: float
    per_layer: tuple[float, ...]
    logits: float | None


def reference_available() -> bool:
    return importlib.util.find_spec("transformers") is not None


def reference_check(folder: str | Path, loaded, text: str = CHECK_TEXT) -> ReferenceCheck | None:
    """``loaded`` (imported from ``folder``) against ``transformers`` on ``text``; None where
    ``transformers`` is missing or the model is no text model of ours (ViT, Marian have their own tests)."""
    if not reference_available() or getattr(loaded, "encoder", None) is None:
        return None
    architecture = _architecture(Path(folder))
    ids = torch.tensor([loaded.text_encoder().encode(text).ids])
    theirs, their_logits = _theirs(Path(folder), architecture, ids)
    ours, our_logits = _ours(loaded, ids)
    per_layer = tuple(float((a - b).abs().max()) for a, b in zip(ours, theirs, strict=True))
    logits = None
    if our_logits is not None and their_logits is not None:
        logits = float((our_logits - their_logits).abs().max())
    return ReferenceCheck(text, architecture, ids.shape[1], max(per_layer), per_layer, logits)


def _architecture(folder: Path) -> str:
    architectures = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8")).get("architectures") or []
    return str(architectures[0]) if architectures else "AutoModel"


def _theirs(folder: Path, architecture: str, ids: torch.Tensor):
    """(attention per layer (1, H, T, T), logits or None) from the reference model."""
    import transformers

    cls = getattr(transformers, architecture, None) or transformers.AutoModel
    model = cls.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    return [a.float() for a in out.attentions], getattr(out, "logits", None)


def _ours(loaded, ids: torch.Tensor):
    """(attention per layer (1, H, T, T), logits or None) from our engine."""
    model = loaded.model
    with torch.no_grad():
        out = model(ids.to(next(model.parameters()).device), need_weights=True)
        if loaded.head == LANGUAGE_MODEL:
            return [w.weights.cpu() for w in out.attention], out.logits.cpu()
        weights = [w.weights.cpu() for w in out.encoder.attention]
        if loaded.head == MASKED_LM:
            return weights, model.token_logits(out.encoder.hidden).cpu()
        return weights, None if out.logits is None else out.logits.cpu()
