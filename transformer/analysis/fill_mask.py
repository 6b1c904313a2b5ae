"""Fill in the blank with a masked language model: at each [MASK] (or <mask>) of a sentence, the
most likely tokens and their probabilities, with every head's attention of the same pass."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.loaded import LoadedModel

TOP_K = 5


@dataclass(frozen=True)
class Guess:
    token: str  # shown readably (a byte-level piece's leading space as ␣)
    id: int
    probability: float


@dataclass(frozen=True)
class Blank:
    position: int  # index into ``FillResult.tokens``
    guesses: list[Guess]


@dataclass(frozen=True)
class FillResult:
    """tokens and ids as the model saw them; blanks in order; attention (L, H, T, T) float32."""

    tokens: list[str]
    ids: list[int]
    blanks: list[Blank]
    attention: np.ndarray


@torch.no_grad()
def fill_mask(loaded: LoadedModel, text: str, top_k: int = TOP_K, max_len: int | None = None) -> FillResult:
    """The ``top_k`` tokens at each mask position of ``text``; ValueError when the model is not a masked
    language model or the text has no mask token (the message names the token to type)."""
    model = loaded.model
    if not hasattr(model, "token_logits"):
        raise ValueError("Fill-in-the-blank needs a masked language model (e.g. BertForMaskedLM).")
    encoder = loaded.text_encoder()
    mask_token = loaded.vocab.id_to_token(encoder.mask_id) if encoder.mask_id is not None else "[MASK]"
    encoded = encoder.encode(text, max_len or loaded.config.max_len)
    positions = [i for i, index in enumerate(encoded.ids) if index == encoder.mask_id]
    if not positions:
        raise ValueError(f"Type {mask_token} where a word is missing, e.g. 'The movie was {mask_token}.'")
    device = next(model.parameters()).device
    ids = torch.tensor([encoded.ids], device=device)
    out = model(ids, need_weights=True)
    logits = model.token_logits(out.encoder.hidden)[0, positions]  # (M, V)
    probs = torch.softmax(logits.float(), dim=-1)
    top = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    blanks = [
        Blank(pos, [Guess(_shown(encoder, loaded, int(i)), int(i), float(p)) for p, i in zip(ps, ix)])
        for pos, ps, ix in zip(positions, top.values.cpu(), top.indices.cpu())
    ]
    attention = torch.stack([w.weights[0] for w in out.encoder.attention]).float().cpu().numpy()
    return FillResult(encoded.tokens, encoded.ids, blanks, attention)


def _shown(encoder, loaded: LoadedModel, index: int) -> str:
    return encoder.show(loaded.vocab.id_to_token(index), index)
