"""How a model turns its last residual stream into vocabulary logits, as a chain of its own modules.

Every model with an output vocabulary ends in a short chain: the decoder-only language model in its
final norm and output layer; a masked language model in its MLM head (dense, activation, LayerNorm,
decoder); an encoder-decoder in the decoder's final norm (if any) and its generator. ``readout``
calls that chain (the logit lens runs it on every layer's stream); ``token_direction`` sends a set of
parts through it with every norm and activation held at the forward pass's values, down to one
token's logit, so the parts' logits add up to the model's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..core.decoder import DecoderLM
from ..core.masked_lm import MaskedLanguageModel
from ..core.model import EncoderDecoder
from .frozen import freeze_norm, frozen_gate


@dataclass(frozen=True)
class Step:
    """One link of the chain: ``kind`` "norm" (a norm module), "linear" (an nn.Linear) or "pointwise"
    (an activation function)."""

    kind: str
    fn: object


def chain(model: nn.Module) -> list[Step]:
    """The model's readout, first step first; ValueError for a model without an output vocabulary."""
    if isinstance(model, DecoderLM):
        return _norm(model.final_norm) + [Step("linear", model.output)]
    if isinstance(model, MaskedLanguageModel):
        head = model.mlm_head
        steps = [Step("linear", head.dense), Step("pointwise", head.activation), Step("norm", head.norm)]
        return _norm(model.encoder.final_norm) + steps + [Step("linear", head.decoder)]
    if isinstance(model, EncoderDecoder):
        return _norm(model.decoder.final_norm) + [Step("linear", model.generator)]
    raise ValueError(
        f"A {type(model).__name__} has no output vocabulary to read its layers through: the logit lens and the "
        "contributions need a language model, a masked language model or an encoder-decoder."
    )


def has_vocabulary(model: nn.Module) -> bool:
    return isinstance(model, DecoderLM | MaskedLanguageModel | EncoderDecoder)


def _norm(norm: nn.Module | None) -> list[Step]:
    return [] if norm is None or isinstance(norm, nn.Identity) else [Step("norm", norm)]


def readout(steps: list[Step], x: torch.Tensor) -> torch.Tensor:
    """x (..., D) -> logits (..., V) through the chain (the model's own modules)."""
    for step in steps:
        x = step.fn(x)
    return x


def token_logit_parts(steps: list[Step], parts: torch.Tensor, bias_row: int, token: int) -> torch.Tensor:
    """parts (P, D) at one position (summing to the stream there; row ``bias_row`` holds the constants)
    -> (P,) their shares of ``token``'s logit, summing to the logit the chain gives on the sum."""
    x = parts.sum(0)
    for step in steps[:-1]:
        if step.kind == "norm":
            frozen = freeze_norm(step.fn, x[None])
            parts = frozen.apply(parts)
            parts[bias_row] = parts[bias_row] + frozen.bias
        elif step.kind == "linear":
            parts = parts @ step.fn.weight.T
            if step.fn.bias is not None:
                parts[bias_row] = parts[bias_row] + step.fn.bias
        else:
            parts = parts * frozen_gate(step.fn, x)
        x = readout([step], x)
    last = steps[-1].fn
    shares = parts @ last.weight[token]
    if last.bias is not None:
        shares[bias_row] = shares[bias_row] + last.bias[token]
    return shares
