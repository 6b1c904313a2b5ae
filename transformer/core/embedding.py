"""Token embedding plus positional encoding."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .config import ModelConfig
from .packed import BlockInt8Table
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding


@dataclass(frozen=True)
class EmbeddingOutput:
    """tokens (B, T, D) token embeddings (scaled by √D when the config says so),
    positions (T, D) positional encodings, combined (B, T, D) their sum (before dropout): what the
    first layer reads. Where the config has them (imported BERT-family encoders), combined also
    holds the segment embedding of type 0 and the embedding LayerNorm, and with ``embedding_dim``
    tokens and positions are (·, E) and combined their sum projected to D."""

    tokens: torch.Tensor
    positions: torch.Tensor
    combined: torch.Tensor


class Embedding(nn.Module):
    """ids (B, T) -> token embedding (× √D if configured) + positional encoding."""

    def __init__(self, config: ModelConfig, vocab_size: int, pad_id: int) -> None:
        super().__init__()
        width = config.embedding_dim or config.d_model
        if config.packed_embedding:  # int8 blocks, rows dequantised when read (core/packed.py)
            self.tokens = BlockInt8Table(vocab_size, width)
        else:
            self.tokens = nn.Embedding(vocab_size, width, padding_idx=pad_id)
        if config.scale_embedding and not config.packed_embedding:
            # the × √D scale then gives entries of size ~1, comparable to the sinusoids
            nn.init.normal_(self.tokens.weight, std=config.d_model**-0.5)
            with torch.no_grad():
                self.tokens.weight[pad_id].zero_()
        self.scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.max_len = config.max_len
        if config.positional in ("sinusoidal", "sinusoidal_halves"):
            halves = config.positional == "sinusoidal_halves"
            self.positions = SinusoidalPositionalEncoding(config.max_len, config.d_model, config.pe_base, halves)
        elif config.positional == "learned":
            self.positions = LearnedPositionalEmbedding(config.max_len + config.position_offset, width)
        else:
            self.positions = None
        self.position_offset = config.position_offset
        self.token_types = nn.Embedding(config.type_vocab_size, width) if config.type_vocab_size else None
        self.norm = nn.LayerNorm(width, eps=config.layer_norm_eps) if config.embedding_norm else None
        self.project = nn.Linear(width, config.d_model) if width != config.d_model else None
        self.dropout = nn.Dropout(config.dropout)

    def token_embeddings(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) -> (B, T, D), scaled."""
        return self.tokens(ids) * self.scale

    def forward(
        self, ids: torch.Tensor, token_embeddings: torch.Tensor | None = None, offset: int = 0
    ) -> tuple[torch.Tensor, EmbeddingOutput]:
        """Returns (dropout(sum) (B, T, D), EmbeddingOutput). ``token_embeddings`` (B, T, D)
        replaces the lookup (used for gradient attributions). ``offset``: the position of the
        first id (incremental decoding feeds the ids after the ``offset`` already decoded)."""
        length = ids.shape[1]
        if offset + length > self.max_len:
            raise ValueError(f"Input has {offset + length} tokens; this model takes at most {self.max_len}.")
        tokens = self.token_embeddings(ids) if token_embeddings is None else token_embeddings
        if self.positions is None:
            positions = tokens.new_zeros(length, tokens.shape[-1])
        else:
            start = self.position_offset + offset
            positions = self.positions(start + length)[start:].to(tokens.dtype)
        combined = self._imported_extras(tokens + positions)
        return self.dropout(combined), EmbeddingOutput(tokens, positions, combined)

    def _imported_extras(self, summed: torch.Tensor) -> torch.Tensor:
        """(B, T, E) -> (B, T, D): segment embedding of type 0, LayerNorm and projection, where configured."""
        if self.token_types is not None:
            summed = summed + self.token_types.weight[0]
        if self.norm is not None:
            summed = self.norm(summed)
        return summed if self.project is None else self.project(summed)
