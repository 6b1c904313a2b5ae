"""``inspect --lens`` and ``--contributions``: what they add to one input's record.

``lens``: one entry per reading (the embedding, then each layer) with ``next_tokens`` for the last
position (as a language model's ``prediction``; a masked language model's first blank, or its last
token when it has none; an encoder-decoder's last decoding step, the one that wrote its last token) and the rank and probability of
the model's own answer there. ``contributions``: each part's share of that answer's logit (the
embedding, every head, every feed-forward block, the biases) with their ``sum`` and the model's ``logit``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..core.bpe_text import show_token
from ..core.loaded import LoadedModel
from ..core.model import EncoderDecoder
from .contributions import contributions
from .lens import logit_lens
from .readout import has_vocabulary

TOP = 5


def residual_entries(loaded: LoadedModel, record: dict, lens: bool, parts: bool) -> dict:
    """``record`` with ``lens`` and/or ``contributions`` added (a ``residual_note`` instead for a model
    without an output vocabulary or a record that was not run)."""
    if not (lens or parts) or not record.get("ids"):
        return record
    model = loaded.model
    if not has_vocabulary(model):
        note = "This model has no output vocabulary: the lens and contributions need a language model."
        return {**record, "residual_note": note}
    ids, target, position = _inputs(loaded, record)
    out = dict(record)
    if lens:
        out["lens"] = lens_entries(loaded, model, ids, target, position)
    if parts:
        out["contributions"] = contribution_entry(loaded, model, ids, target, position)
    return out


def _inputs(loaded: LoadedModel, record: dict) -> tuple[torch.Tensor, torch.Tensor | None, int]:
    """(ids (1, T), the decoder's ids (1, T_t) or None, the position read)."""
    device = next(loaded.model.parameters()).device
    ids = torch.tensor([record["ids"]], device=device)
    if isinstance(loaded.model, EncoderDecoder):
        vocab = loaded.target_vocab or loaded.vocab
        target = [vocab.token_to_id(t) for t in record.get("decoder_tokens", [])]
        if not target:
            raise ValueError("An encoder-decoder's lens reads its decoder: this record has no decoder tokens.")
        return ids, torch.tensor([target], device=device), max(0, len(target) - 2)  # the step that wrote the last token
    encoder = getattr(loaded, "encoder", None)
    mask_id = getattr(encoder, "mask_id", None)
    blanks = [i for i, index in enumerate(record["ids"]) if mask_id is not None and index == mask_id]
    return ids, None, blanks[0] if blanks else len(record["ids"]) - 1


def lens_entries(loaded: LoadedModel, model: nn.Module, ids, target, position: int) -> list[dict]:
    lens = logit_lens(model, ids, target, TOP, positions=[position])  # that position alone: (L + 1, 1, k)
    return [
        {
            "layer": layer,
            "position": position,
            "next_tokens": [
                {"token": _token(loaded, int(i)), "id": int(i), "probability": float(p)}
                for i, p in zip(lens.top_ids[layer, 0], lens.top_probs[layer, 0])
            ],
            "answer_rank": int(lens.answer_rank[layer, 0]),
            "answer_probability": float(lens.answer_prob[layer, 0]),
        }
        for layer in range(lens.top_ids.shape[0])
    ]


def contribution_entry(loaded: LoadedModel, model: nn.Module, ids, target, position: int) -> dict:
    c = contributions(model, ids, position, None, target)
    parts = [
        {"part": kind, "layer": int(layer), "head": int(head), "value": round(float(v), 6)}
        for kind, layer, head, v in zip(c.kinds, c.layers, c.heads, c.values)
    ]
    return {
        "position": c.position,
        "token": _token(loaded, c.token),
        "id": c.token,
        "parts": parts,
        "sum": float(np.sum(c.values)),
        "logit": c.logit,
        "norms_held": "every norm after a sublayer and in the head at the forward's scale"
        if c.post_norm
        else "the final norm at the forward's scale",
    }


def _token(loaded: LoadedModel, index: int) -> str:
    """A vocabulary id as the record's ``prediction`` writes it."""
    if loaded.lm_tokenizer is not None:
        return show_token(loaded.lm_tokenizer, index)
    vocab = loaded.target_vocab if isinstance(loaded.model, EncoderDecoder) and loaded.target_vocab else loaded.vocab
    return vocab.id_to_token(index)
