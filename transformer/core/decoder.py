"""A decoder-only Transformer: token + position embedding (or, with rotary positions, none: each head
rotates its queries and keys), the core's ``EncoderLayer`` run with the look-ahead mask in every layer
(masked self-attention, feed-forward), a final norm and an output layer, tied to the input embedding or not.
The config's layer options choose between the first bundled model's GPT-2-like layers and Llama's
(RMSNorm, SwiGLU, grouped-query attention, no biases).

Forward returns a frozen dataclass; attention weights are returned, never stored on modules.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .attention import HeadWeights
from .config import ModelConfig
from .embedding import Embedding, EmbeddingOutput
from .layers import EncoderLayer, make_norm
from .masks import layer_look_ahead_mask
from .packed import TiedBlockOutput

KIND = "language-model"


@dataclass(frozen=True)
class LMOutput:
    """logits (B, T, V): the next-token scores after each position; hidden (B, T, D) after the final
    norm; attention: one HeadWeights (B, H, T, T) per layer, zero above the diagonal (empty unless asked)."""

    logits: torch.Tensor
    hidden: torch.Tensor
    embeddings: EmbeddingOutput
    attention: list[HeadWeights]


class DecoderLM(nn.Module):
    """ids (B, T) -> next-token logits (B, T, V). ``config.kind`` is ``"language-model"``."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.kind != KIND:
            raise ValueError(f"DecoderLM needs a config of kind {KIND!r}, not {config.kind!r}.")
        self.config = config
        self.embedding = Embedding(config, config.vocab_size, config.pad_id)
        self.layers = nn.ModuleList(EncoderLayer(config, i) for i in range(config.num_layers))
        self.final_norm = make_norm(config) if config.final_norm else nn.Identity()
        if config.packed_embedding and config.tie_output_embedding:  # logits read the 8-bit table group by group
            self.output = TiedBlockOutput(self.embedding.tokens)
            return
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_output_embedding:
            self.output.weight = self.embedding.tokens.weight

    def forward(self, ids: torch.Tensor, need_weights: bool = False, head_mask: torch.Tensor | None = None) -> LMOutput:
        """ids (B, T) with T <= max_len; head_mask (L, H) or (B, L, H) gates, 1 = on."""
        x, emb = self.embedding(ids)
        records = []
        for i, layer in enumerate(self.layers):
            gates = None if head_mask is None else head_mask[..., i, :]
            mask = layer_look_ahead_mask(self.config, i, ids.shape[1], ids.device)  # (T, T): query t sees keys ..t
            x, weights = layer(x, mask, need_weights, gates)
            if weights is not None:
                records.append(weights)
        hidden = self.final_norm(x)
        return LMOutput(self.output(hidden), hidden, emb, records)


def lm_config(vocab_size: int, **sizes) -> ModelConfig:
    """The bundled language model's recipe: pre-norm GELU layers, learned positions, a final norm,
    tied output embedding; ``sizes`` override any config field (d_model, num_heads, ..., and the layer
    options positional="rotary", norm_style="rms", gated_ffn, num_kv_heads, the bias flags)."""
    base = dict(
        kind=KIND,
        vocab_size=vocab_size,
        d_model=128,
        num_heads=4,
        num_layers=2,
        d_ff=512,
        max_len=128,
        dropout=0.0,
        activation="gelu",
        positional="learned",
        norm_first=True,
        final_norm=True,
        tie_output_embedding=True,
        pad_id=1,
        bos_id=2,
        eos_id=2,
        label_names=("next-token", "none"),
        tokenizer="byte_bpe",
        target_vocab_size=0,
        num_decoder_layers=0,
    )
    base.update(sizes)
    return ModelConfig(**base)


def init_weights(model: DecoderLM, std: float = 0.02) -> None:
    """GPT-2-style: normal(0, std) for linear and embedding weights, zero biases."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
