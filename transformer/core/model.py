"""Encoder, decoder, the sequence classifier and the encoder-decoder model.

Every forward returns a frozen dataclass; attention weights are returned, never stored on
modules, because one cached model serves many sessions at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .attention import HeadWeights, blocked_cells
from .config import ModelConfig
from .embedding import Embedding, EmbeddingOutput
from .layers import DecoderLayer, EncoderLayer, LayerCache, make_norm
from .masks import decoder_self_mask, padding_mask


@dataclass(frozen=True)
class EncoderOutput:
    """hidden (B, T, D); mask (B, 1, T, T); attention: one HeadWeights per layer (empty unless asked)."""

    hidden: torch.Tensor
    mask: torch.Tensor
    embeddings: EmbeddingOutput
    attention: list[HeadWeights]


class Encoder(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pad_id = config.pad_id
        self.embedding = Embedding(config, config.vocab_size, config.pad_id)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))
        self.final_norm = make_norm(config) if config.final_norm else None

    def forward(
        self,
        ids: torch.Tensor,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
        token_embeddings: torch.Tensor | None = None,
        weights_out: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> EncoderOutput:
        """ids (B, T); head_mask (L, H) gates, 1 = on, or (B, L, H) gates per input;
        token_embeddings (B, T, D) overrides the lookup; weights_out: float32 (B, L, H, T, T)
        to write every layer's weights into (implies ``need_weights``); keep (B, T) bool, True at real
        tokens: which positions are padding, as the tokenizer says (default: ids equal to the pad id)."""
        mask = padding_mask(ids, self.pad_id) if keep is None else keep_mask(keep)  # (B, 1, T, T)
        layer_mask = None if blocked_cells(mask) is None else mask  # checked once, not in every layer
        x, emb = self.embedding(ids, token_embeddings)
        records = []
        for i, layer in enumerate(self.layers):
            gates = None if head_mask is None else head_mask[..., i, :]  # (H,) or (B, H)
            out = None if weights_out is None else weights_out[:, i]  # (B, H, T, T)
            x, weights = layer(x, layer_mask, need_weights, gates, out)
            if weights is not None:
                records.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return EncoderOutput(x, mask, emb, records)


def keep_mask(keep: torch.Tensor) -> torch.Tensor:
    """keep (B, T) bool, True at real tokens -> the padding mask (B, 1, T, T), False at padding keys."""
    return keep[:, None, None, :].expand(-1, 1, keep.shape[1], -1)


def pool(hidden: torch.Tensor, keep: torch.Tensor, method: str) -> torch.Tensor:
    """hidden (B, T, D), keep (B, T) True at real tokens -> (B, D), or (B, 2D) for mean_max."""
    if method in ("first", "cls"):
        return hidden[:, 0]
    weights = keep.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
    if method == "mean":
        return mean
    maxed = hidden.masked_fill(~keep.unsqueeze(-1), torch.finfo(hidden.dtype).min).amax(1)
    return maxed if method == "max" else torch.cat([mean, maxed], dim=-1)


@dataclass(frozen=True)
class ClassifierOutput:
    """logits (B, K) (K = 1 for a single sigmoid logit; None when the config has no head),
    pooled (B, D or 2D), the encoder's output."""

    logits: torch.Tensor | None
    pooled: torch.Tensor
    encoder: EncoderOutput


class SequenceClassifier(nn.Module):
    """Encoder, pooling (mean / max / mean_max over real tokens, first token, class token), head."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        width = config.d_model * (2 if config.pooling == "mean_max" else 1)
        self.head_dropout = nn.Dropout(config.dropout)
        # an imported encoder whose head could not be mapped has none: its attention is still shown
        self.classifier = (
            make_head(width, config.head_hidden, config.num_labels, config.head_activation) if config.has_head else None
        )

    def forward(
        self,
        ids: torch.Tensor,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
        token_embeddings: torch.Tensor | None = None,
        weights_out: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        """ids (B, T); the rest as :meth:`Encoder.forward`."""
        enc = self.encoder(ids, need_weights, head_mask, token_embeddings, weights_out, keep)
        real = ids != self.config.pad_id if keep is None else keep
        pooled = pool(enc.hidden, real, self.config.pooling)
        logits = None if self.classifier is None else self.classifier(self.head_dropout(pooled))
        return ClassifierOutput(logits, pooled, enc)

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, K) logits -> (B, labels) probabilities; one sigmoid logit gives [1 - p, p]."""
        if self.config.single_logit:
            p = torch.sigmoid(logits.float())
            return torch.cat([1 - p, p], dim=-1)
        return torch.softmax(logits.float(), dim=-1)


HEAD_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


def make_head(width: int, hidden: tuple[int, ...], num_labels: int, activation: str = "relu") -> nn.Module:
    """A linear layer, or an MLP with ``activation`` (ReLU unless told) between the given hidden sizes."""
    if not hidden:
        return nn.Linear(width, num_labels)
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(width, size), HEAD_ACTIVATIONS[activation]()]
        width = size
    layers.append(nn.Linear(width, num_labels))
    return nn.Sequential(*layers)


@dataclass(frozen=True)
class Seq2SeqOutput:
    """logits (B, T_t, V_t); per-layer HeadWeights for decoder self- and cross-attention."""

    logits: torch.Tensor
    encoder: EncoderOutput
    decoder_self: list[HeadWeights]
    cross: list[HeadWeights]


@dataclass
class DecoderCache:
    """An incremental decoding's state, kept by the caller: one :class:`LayerCache` per decoder
    layer and the target ids (B, T_past) fed so far (their ``<pad>`` keys stay blocked)."""

    layers: list[LayerCache] = field(default_factory=list)
    ids: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.ids is None else self.ids.shape[1]


class Decoder(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pad_id = config.target_padding_id
        self.embedding = Embedding(config, config.target_vocab_size, config.target_pad_id)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_decoder_layers))
        self.final_norm = make_norm(config) if config.final_norm else None

    def new_cache(self) -> DecoderCache:
        """An empty cache for :meth:`forward`, one LayerCache per layer."""
        return DecoderCache([LayerCache() for _ in self.layers])

    def forward(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_keep: torch.Tensor,
        need_weights: bool = False,
        cache: DecoderCache | None = None,
        weights_out: tuple[torch.Tensor, torch.Tensor] | None = None,
        cross_gates: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, list[HeadWeights], list[HeadWeights]]:
        """tgt (B, T_t), memory (B, T_s, D), src_keep (B, T_s) True at real source tokens.

        cache (from :meth:`new_cache`): tgt holds only the ids after the ``cache.length`` fed
        before; the result is their rows (B, T_t, ·), keys and values of earlier steps are reused
        and the memory's are projected once. weights_out: float32 (B, L, H, T_t, T_past + T_t)
        and (B, L, H, T_t, T_s) to write the weights into; cross_gates (L, H): cross-attention
        heads on (1) or off (0)."""
        past = 0 if cache is None else cache.length
        seen = tgt if past == 0 else torch.cat([cache.ids, tgt], dim=1)  # (B, T_past + T_t)
        self_mask = decoder_self_mask(seen, self.pad_id, past)  # (B, 1, T_t, T_past + T_t)
        cross_mask = src_keep[:, None, None, :].expand(-1, 1, tgt.shape[1], -1)  # (B, 1, T_t, T_s)
        # checked once, not in every layer (one new token with no <pad> anywhere blocks nothing)
        self_mask, cross_mask = (None if blocked_cells(m) is None else m for m in (self_mask, cross_mask))
        y, _ = self.embedding(tgt, offset=past)
        self_records, cross_records = [], []
        for i, layer in enumerate(self.layers):
            out = None if weights_out is None else (weights_out[0][:, i], weights_out[1][:, i])
            layer_cache = None if cache is None else cache.layers[i]
            gates = None if cross_gates is None else cross_gates[i]
            y, self_w, cross_w = layer(y, memory, self_mask, cross_mask, need_weights, out, layer_cache, gates)
            if self_w is not None:
                self_records.append(self_w)
                cross_records.append(cross_w)
        if cache is not None:
            cache.ids = seen
        if self.final_norm is not None:
            y = self.final_norm(y)
        return y, self_records, cross_records


class EncoderDecoder(nn.Module):
    """The paper's encoder-decoder; ``generator`` maps decoder states to target-vocabulary logits."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(config.d_model, config.target_vocab_size)
        if config.tie_output_embedding:
            self.generator.weight = self.decoder.embedding.tokens.weight

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        need_weights: bool = False,
        weights_out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    ) -> Seq2SeqOutput:
        """src (B, T_s), tgt (B, T_t). weights_out: float32 encoder (B, L, H, T_s, T_s), decoder
        self (B, L_d, H, T_t, T_t) and cross (B, L_d, H, T_t, T_s) tensors to write the weights into."""
        enc_out, dec_out = (None, None) if weights_out is None else (weights_out[0], weights_out[1:])
        enc = self.encoder(src, need_weights, weights_out=enc_out)
        y, self_w, cross_w = self.decoder(tgt, enc.hidden, src != self.config.pad_id, need_weights, weights_out=dec_out)
        return Seq2SeqOutput(self.generator(y), enc, self_w, cross_w)

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, max_new: int) -> torch.Tensor:
        """src (1, T_s) -> target ids (1, T_t) starting with bos, stopping at eos or max_new.
        Each step feeds only the newest id (keys and values of the earlier ones are cached)."""
        tgt = torch.tensor([[self.config.bos_id]], device=src.device)
        enc = self.encoder(src)
        keep = src != self.config.pad_id
        cache = self.decoder.new_cache()
        for _ in range(min(max_new, self.config.max_len - 1)):
            y, _, _ = self.decoder(tgt[:, -1:], enc.hidden, keep, cache=cache)
            next_id = self.generator(y[:, -1]).argmax(-1, keepdim=True)
            tgt = torch.cat([tgt, next_id], dim=1)
            if int(next_id) == self.config.eos_id:
                break
        return tgt


def build_model(config: ModelConfig) -> nn.Module:
    """The module that a config describes."""
    if config.kind == "encoder-decoder":
        return EncoderDecoder(config)
    return SequenceClassifier(config)
