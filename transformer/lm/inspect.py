"""``inspect`` records for a decoder-only language model (DESIGN.md CLI contract): tokens, ids,
the causal attention (``attention.decoder_self``, layers x heads x T x T, zero above the diagonal)
and the top next tokens after the text."""

from __future__ import annotations

import numpy as np
import torch

from ..core.bpe_text import encode_prompt, show_token
from ..core.decoder import DecoderLM
from ..core.masks import layer_look_ahead_mask

TOP_TOKENS = 10


def lm_record(
    model: DecoderLM,
    tok,
    text: str,
    attention: bool = True,
    max_len: int | None = None,
    top: int = TOP_TOKENS,
    own_tokens: bool = False,
) -> dict:
    """One input's record (without the ``line`` a file input adds); the text is cut to ``max_len``
    tokens (at most the model's context) and ``truncated`` says so. ``own_tokens`` (an imported model):
    the ids and token strings exactly as its tokenizer gives them (:func:`encode_prompt`)."""
    limit = model.config.max_len if max_len is None else min(max_len, model.config.max_len)
    prompt = encode_prompt(tok, text, limit, own_tokens, model.config.bos_id)
    device = next(model.parameters()).device
    with torch.no_grad():
        out = model(torch.tensor([prompt.ids], device=device), need_weights=attention)
    probs = torch.softmax(out.logits[0, -1].double(), -1).cpu().numpy()
    record = {
        "text": text,
        "tokens": prompt.tokens,
        "ids": prompt.ids,
        "truncated": prompt.truncated,
        "prediction": {"next_tokens": top_tokens(tok, probs, top)},
    }
    if not np.isfinite(probs).all():
        record["prediction"] = None
        record["warnings"] = ["The model's probabilities are NaN or infinite (non-finite weights?): no prediction."]
    if attention:
        weights = np.stack([w.weights[0].float().cpu().numpy() for w in out.attention])  # (L, H, T, T)
        record["attention"] = {"decoder_self": np.round(weights.astype(np.float64), 6)}
    return record


def top_tokens(tok, probs: np.ndarray, top: int) -> list[dict]:
    """The ``top`` most likely next tokens: [{"token", "id", "probability"}], most likely first."""
    order = np.argsort(-probs, kind="stable")[:top]
    return [{"token": show_token(tok, int(i)), "id": int(i), "probability": float(probs[i])} for i in order]


@torch.no_grad()
def layer_attention(model: DecoderLM, ids: list[int], layer: int, head_mask: torch.Tensor | None = None) -> np.ndarray:
    """(H, T, T) float32: every head's masked self-attention in layer ``layer`` (0-based) over ``ids``, the
    layers before it run without weights (head_mask (L, H) gating as in the model's forward): one layer's
    matrices, never every layer's (30 layers x 9 heads x 1,000² tokens would be 1 GB)."""
    cfg = model.config
    if not ids or len(ids) > cfg.max_len or not 0 <= layer < cfg.num_layers:
        raise ValueError(f"ids must hold 1 .. {cfg.max_len} tokens and layer be in 0 .. {cfg.num_layers - 1}.")
    device = next(model.parameters()).device
    tokens = torch.tensor([ids], device=device)
    gate = None if head_mask is None else head_mask.to(device)
    x, _ = model.embedding(tokens)
    for i, block in enumerate(model.layers[: layer + 1]):
        mask = layer_look_ahead_mask(cfg, i, len(ids), device)
        x, weights = block(x, mask, i == layer, None if gate is None else gate[i])
    return weights.weights[0].float().cpu().numpy()
