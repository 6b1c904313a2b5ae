"""A masked language model: an encoder (our ``SequenceClassifier`` without a class head, so every
page reads it as it reads any encoder) plus the head that scores every vocabulary token at each
position: dense -> activation -> LayerNorm -> decoder (tied to the token embedding) + bias.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..core.config import ModelConfig
from ..core.model import SequenceClassifier

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


class MaskedLMHead(nn.Module):
    """hidden (B, T, D) -> logits (B, T, V) through a (D -> W) dense layer, activation and LayerNorm."""

    def __init__(self, d_model: int, width: int, vocab_size: int, activation: str, eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, width)
        self.norm = nn.LayerNorm(width, eps=eps)
        self.decoder = nn.Linear(width, vocab_size)
        self.activation = ACTIVATIONS[activation]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(self.activation(self.dense(hidden))))


class MaskedLanguageModel(SequenceClassifier):
    """An encoder whose forward is :class:`SequenceClassifier`'s (attention, no class logits) and whose
    :meth:`token_logits` fills in blanks. ``config.has_head`` must be False."""

    def __init__(self, config: ModelConfig, activation: str = "gelu", width: int = 0, tied: bool = True) -> None:
        if config.has_head:
            raise ValueError("A masked language model's config has has_head=False (its head is the MLM head).")
        super().__init__(config)
        width = width or config.embedding_dim or config.d_model
        self.mlm_head = MaskedLMHead(config.d_model, width, config.vocab_size, activation, config.layer_norm_eps)
        if tied:
            self.mlm_head.decoder.weight = self.encoder.embedding.tokens.weight

    def token_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The encoder's output (B, T, D) -> vocabulary logits (B, T, V)."""
        return self.mlm_head(hidden)
