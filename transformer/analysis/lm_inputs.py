"""A decoder-only language model's inputs and run for :func:`transformer.analysis.analyze`.

Text becomes ids as the CLI's ``inspect``, Generate and the head atlas read it (``encode_prompt``): a
model trained here reads ``<|endoftext|>`` first, an imported one exactly what its own tokenizer gives
(its start token where the tokenizer adds one). The run walks the embedding and the layers with each
layer's look-ahead mask, as :class:`transformer.core.decoder.DecoderLM` does, writing every head's
weights into one buffer; the output layer is applied to each input's last position only: never a
tokens × vocabulary tensor.
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.bpe_text import encode_prompt, show_token
from ..core.decoder import KIND
from ..core.inputs import EncodedInputs
from ..core.loaded import LoadedModel
from ..core.masks import layer_look_ahead_mask
from ..core.model import EncoderOutput
from ..core.tokenizer import Encoded

TOP_NEXT = 20  # next tokens kept per input (ids and probabilities), most likely first


def is_language_model(loaded: LoadedModel) -> bool:
    """A decoder-only language model with its own tokenizer (bundled, imported or GGUF)."""
    return loaded.config.kind == KIND and getattr(loaded, "lm_tokenizer", None) is not None


def own_tokens(loaded: LoadedModel) -> bool:
    """An imported model (it has the reference tokenizer's text encoder): its tokenizer's ids, nothing added."""
    return getattr(loaded, "encoder", None) is not None


def token_limit(loaded: LoadedModel, max_len: int | None) -> int:
    """Tokens an input is cut to (every model's, as ``analyze`` and the CLI cut it): ``max_len`` (default: the
    model's chosen length), at most its context."""
    cfg = loaded.config
    limit = min(max_len or cfg.default_max_tokens or cfg.max_len, cfg.max_len)
    if limit < 1:
        raise ValueError("The maximum length must be at least 1 token.")
    return limit


def lm_encoded(loaded: LoadedModel, ids: list[int], limit: int) -> Encoded:
    """``ids`` (start token included) cut to ``limit``, with the tokens the CLI writes for them: an
    imported model's own strings (``Ġmovie``), a model trained here's as text (``␣movie``)."""
    tok, kept = loaded.lm_tokenizer, [int(i) for i in ids[:limit]]
    if own_tokens(loaded):
        tokens = [tok.id_to_token(i) or f"<id {i}>" for i in kept]
    else:
        tokens = [show_token(tok, i) for i in kept]
    return Encoded(tokens, kept, [False] * len(kept), len(ids) > limit, len(ids))


def text_ids(loaded: LoadedModel, text: str) -> list[int]:
    """The whole prompt of ``text`` (not cut), as ``inspect`` reads it."""
    return encode_prompt(loaded.lm_tokenizer, text, None, own_tokens(loaded), loaded.config.bos_id).ids


def encode_lm_inputs(loaded: LoadedModel, texts: list[str], max_len: int | None = None) -> EncodedInputs:
    """``texts`` as a language model reads them, each cut to :func:`token_limit`."""
    if not texts:
        raise ValueError("No input: type at least one sentence.")
    limit = token_limit(loaded, max_len)
    encoded = [lm_encoded(loaded, text_ids(loaded, text), limit) for text in texts]
    empty = [i + 1 for i, e in enumerate(encoded) if not e.ids]
    if empty:
        raise ValueError(f"Input {', '.join(map(str, empty))} has no words: type some text.")
    return EncodedInputs(list(texts), encoded, limit)


def ids_inputs(loaded: LoadedModel, ids: list[int], text: str, limit: int) -> EncodedInputs:
    """One input given as ids (a repeated text, random tokens), ``text`` its description."""
    return EncodedInputs([text], [lm_encoded(loaded, ids, limit)], limit)


def run_language_model(model, ids: torch.Tensor, keep: torch.Tensor, buffer: torch.Tensor | None):
    """ids (B, T), keep (B, T) True at real tokens -> (EncoderOutput: hidden (B, T, D) after the final
    norm, the mask (B, 1, T, T) (look-ahead, padding keys blocked), embeddings, one HeadWeights per
    layer written into ``buffer`` (B, L, H, T, T); the next-token probabilities after each input's
    last real token, (B, V) float64)."""
    x, emb = model.embedding(ids)
    records = []
    for i, layer in enumerate(model.layers):
        mask = layer_look_ahead_mask(model.config, i, ids.shape[1], ids.device)  # (T, T): query t sees keys ..t
        x, weights = layer(x, mask, True, None, None if buffer is None else buffer[:, i])
        records.append(weights)
    hidden = model.final_norm(x)
    last = keep.sum(dim=1) - 1  # (B,)
    logits = model.output(hidden[torch.arange(ids.shape[0], device=ids.device), last])  # (B, V)
    probs = torch.softmax(logits.double(), -1)
    causal = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool, device=ids.device).tril()
    return EncoderOutput(hidden, causal & keep[:, None, None, :], emb, records), probs


def top_next(probs: torch.Tensor, k: int = TOP_NEXT) -> tuple[np.ndarray, np.ndarray]:
    """(B, V) probabilities -> the ``k`` most likely ids (B, k) int64 and their probabilities (B, k)
    float64, most likely first (ties: the lower id first, as ``inspect`` orders them)."""
    values = probs.cpu().numpy()
    order = np.argsort(-values, axis=1, kind="stable")[:, :k]
    return order.astype(np.int64), np.take_along_axis(values, order, axis=1)
