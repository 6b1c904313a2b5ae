"""Who wrote the answer: each part's direct share of one token's logit at one position, and the
effect on that logit of switching each head off.

Direct shares (``contributions``): the stream at the position is split into the embedding, every
head, every feed-forward block and the biases (``stream.Parts``), and each part goes through the
readout with every norm and activation held at the forward pass's values; the shares add up to the
model's own logit. In a post-norm model (the course's encoders, BERT) the norms after each sublayer
are held too, so a part's share is what it adds through those scales as they were, not what the
logit would be without it: that is what "switching off" (``head_effects``) measures, by running the
model again with the head's gate at 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..analysis.ablation import head_mask
from ..core.decoder import DecoderLM
from ..core.masks import layer_look_ahead_mask
from ..core.model import EncoderDecoder, SequenceClassifier
from .readout import Step, chain, readout, token_logit_parts
from .stream import BIAS, HEAD, trace


@dataclass(frozen=True)
class Contributions:
    """``values`` (P,) each part's share of ``token``'s logit at ``position``; ``kinds``, ``layers``,
    ``heads`` say which part (``stream`` kinds; layer and head -1 where none); ``logit`` the model's own."""

    position: int
    token: int
    kinds: list[str]
    layers: np.ndarray
    heads: np.ndarray
    values: np.ndarray
    logit: float
    post_norm: bool

    @property
    def total(self) -> float:
        return float(self.values.sum())

    def grid(self, kind: str = HEAD) -> np.ndarray:
        """(L, H) the heads' shares of one kind (``HEAD`` or ``CROSS_HEAD``)."""
        pick = [i for i, k in enumerate(self.kinds) if k == kind]
        if not pick:
            return np.zeros((0, 0))
        shape = (int(self.layers[pick].max()) + 1, int(self.heads[pick].max()) + 1)
        out = np.zeros(shape)
        out[self.layers[pick], self.heads[pick]] = self.values[pick]
        return out

    def by_kind(self, kind: str) -> np.ndarray:
        """The shares of one kind in layer order (``FFN`` (L,), the embedding (1,), the biases (1,))."""
        return self.values[[i for i, k in enumerate(self.kinds) if k == kind]]


@torch.no_grad()
def contributions(
    model: nn.Module,
    ids: torch.Tensor,
    position: int = -1,
    token: int | None = None,
    target: torch.Tensor | None = None,
) -> Contributions:
    """ids (1, T) (an encoder-decoder's source; ``target`` (1, T_t) its decoder input, the position
    then being the target's); ``token``: whose logit (default: the model's top token there)."""
    steps = chain(model)
    length = (ids if target is None else target).shape[1]
    if not -length <= position < length:
        raise ValueError(f"No position {position}: the input has {length} tokens.")
    position %= length
    if isinstance(model, DecoderLM):
        ids = ids[:, : position + 1]  # later tokens cannot change a causal model's row
    # the parts at the one position read (P, 1, D), no attention weights kept: bounded by P × D, not P × T × D
    traced = trace(model, ids, target, split=True, weights=False, at=position)
    logits = readout(steps, traced.streams[-1][position])  # (V,)
    token = int(logits.argmax()) if token is None else token
    if not 0 <= token < logits.shape[-1]:
        raise ValueError(f"No token id {token}: the vocabulary has {logits.shape[-1]} tokens.")
    parts = traced.parts
    vectors = parts.stacked()[:, 0].double()
    double_steps = _in_double(steps[:-1]) + [Step("linear", _DoubleLinear(steps[-1].fn, token))]
    shares = token_logit_parts(double_steps, vectors, parts.kinds.index(BIAS), 0)
    return Contributions(
        position,
        token,
        list(parts.kinds),
        np.asarray(parts.layers),
        np.asarray(parts.heads),
        shares.cpu().numpy(),
        float(logits[token]),
        not _pre_norm(model),
    )


def _in_double(steps):
    """The chain's steps with their linear layers' weights in float64 (the shares summed in float64)."""
    out = []
    for step in steps:
        if step.kind == "linear":
            out.append(Step("linear", _DoubleLinear(step.fn)))
        elif step.kind == "norm":
            out.append(Step("norm", _DoubleNorm(step.fn)))
        else:
            out.append(step)
    return out


class _DoubleLinear:
    """A linear layer in float64; ``row``: only that output (the readout's last layer at one token: a
    (1, D) copy, not the whole vocabulary's V × D)."""

    def __init__(self, linear: nn.Linear, row: int | None = None) -> None:
        pick = slice(None) if row is None else slice(row, row + 1)
        self.weight = linear.weight[pick].double()
        self.bias = None if linear.bias is None else linear.bias[pick].double()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight, self.bias)


class _DoubleNorm:
    """A norm module called on float64 input: its own arithmetic in its own dtype, the answer in float64."""

    def __init__(self, norm: nn.Module) -> None:
        self.norm = norm
        weight = getattr(norm, "weight", None)
        self.weight = None if weight is None else weight.double()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        dtype = next(self.norm.parameters(), torch.empty(0)).dtype
        return self.norm(x.to(dtype)).double()


def _pre_norm(model: nn.Module) -> bool:
    return bool(model.config.norm_first)


@dataclass(frozen=True)
class HeadEffects:
    """``token``'s logit at ``position`` with every head on (``base``) and the change when one head
    is switched off, ``change`` (L, H) (negative: the head was pushing the token up). ``cross``: the
    heads are an encoder-decoder's cross-attention heads (its self-attention cannot be gated)."""

    position: int
    token: int
    base: float
    change: np.ndarray
    cross: bool


TOKEN_RUNS = 16_384  # switching heads off: at most this many (variant, token) pairs through the model


def ablation_limit(model: nn.Module) -> int:
    """The most tokens :func:`head_effects` reads on ``model``: one run per head and one with every head
    on, so TOKEN_RUNS // (L × H + 1) tokens (a language model's up to the position read; at least 1).
    SmolLM2 (30 × 9 heads): 60 tokens; the bundled review-lm (2 × 4): 1,820."""
    cfg = model.config
    layers = cfg.num_decoder_layers if isinstance(model, EncoderDecoder) else cfg.num_layers
    return max(1, TOKEN_RUNS // (layers * cfg.num_heads + 1))


@torch.no_grad()
def head_effects(
    model: nn.Module,
    ids: torch.Tensor,
    position: int,
    token: int,
    target: torch.Tensor | None = None,
    chunk: int = 16,
) -> HeadEffects:
    """Each head switched off in turn (its gate at 0, as the Classifier page does), ``chunk`` variants per
    batch; ValueError past :func:`ablation_limit` tokens (the cost is one run of the model per head)."""
    cfg = model.config
    if isinstance(model, EncoderDecoder):
        return _cross_effects(model, ids, target, position, token)
    layers, heads = cfg.num_layers, cfg.num_heads
    if isinstance(model, DecoderLM):
        ids = ids[:, : position % ids.shape[1] + 1]  # later tokens cannot change a causal model's row
        position = ids.shape[1] - 1
    if ids.shape[1] > ablation_limit(model):
        raise ValueError(
            f"Switching each of the {layers * heads} heads off reads at most {ablation_limit(model)} tokens "
            f"on this model, not {ids.shape[1]}: choose an earlier position or a shorter text."
        )
    masks = torch.stack([head_mask(layers, heads, [(i, h)]) for i in range(layers) for h in range(heads)])
    masks = torch.cat([torch.ones(1, layers, heads), masks]).to(ids.device)  # row 0: every head on
    values = []
    for start in range(0, masks.shape[0], chunk):
        gates = masks[start : start + chunk]
        values.append(_token_logit(model, ids.expand(gates.shape[0], -1), gates, position, token).double().cpu())
    values = torch.cat(values).numpy()
    return HeadEffects(position, token, float(values[0]), (values[1:] - values[0]).reshape(layers, heads), False)


def _token_logit(model: nn.Module, ids: torch.Tensor, gates: torch.Tensor, position: int, token: int) -> torch.Tensor:
    """ids (n, T), gates (n, L, H) -> (n,) ``token``'s logit at ``position``, read from that position's
    stream alone (never the (n, T, V) logits of every position)."""
    if isinstance(model, DecoderLM):
        x, _ = model.embedding(ids)
        for i, layer in enumerate(model.layers):
            mask = layer_look_ahead_mask(model.config, i, ids.shape[1], ids.device)
            x, _ = layer(x, mask, False, gates[:, i])
        x = model.final_norm(x[:, position])  # (n, D)
        out = model.output
        return x @ out.weight[token] + (0 if out.bias is None else out.bias[token])
    if isinstance(model, SequenceClassifier) and hasattr(model, "token_logits"):
        hidden = model(ids, head_mask=gates).encoder.hidden[:, position : position + 1]  # (n, 1, D)
        return model.token_logits(hidden)[:, 0, token]
    raise ValueError(
        f"Switching heads off needs a language model or a masked language model, not {type(model).__name__}."
    )


def _cross_effects(model: EncoderDecoder, ids, target, position: int, token: int) -> HeadEffects:
    if target is None:
        raise ValueError("An encoder-decoder's heads are switched off on its decoder: give the target ids too.")
    cfg = model.config
    memory = model.encoder(ids).hidden
    keep = ids != cfg.pad_id
    layers, heads = cfg.num_decoder_layers, cfg.num_heads

    def logit(gates):
        y, _, _ = model.decoder(target, memory, keep, cross_gates=gates)
        return float(model.generator(y[0, position])[token])

    base = logit(None)
    change = np.zeros((layers, heads))
    for i in range(layers):
        for h in range(heads):
            change[i, h] = logit(head_mask(layers, heads, [(i, h)]).to(ids.device)) - base
    return HeadEffects(position % target.shape[1], token, base, change, True)
