"""A masked language model (imported BERT-family ``*ForMaskedLM`` folders and the ones trained here): an encoder (our ``SequenceClassifier`` without a class head, so every
page reads it as it reads any encoder) plus the head that scores every vocabulary token at each
position: dense -> activation -> LayerNorm -> decoder (tied to the token embedding) + bias.
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .model import SequenceClassifier
from .tokenizer import CLS, MASK, PAD, Encoded, TextEncoder

KIND = "masked-lm"  # config.kind of a masked language model trained here
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


BLANK = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)  # how a blank may be typed: BERT's or RoBERTa's spelling


class BlankTextEncoder:
    """A :class:`TextEncoder` for a masked language model trained here: a blank typed in the text ("[MASK]"
    or "<mask>") becomes the model's ``<mask>`` token; everything between blanks is tokenised as usual (where
    a typed special token is an unknown word, so a text cannot inject ``<pad>`` or ``<cls>``)."""

    def __init__(self, inner: TextEncoder) -> None:
        self.inner = inner
        self.vocab = inner.vocab
        self.mask_id = inner.vocab.stoi.get(MASK)

    def encode(self, text: str, max_len: int | None = None, add_cls: bool = False) -> Encoded:
        """Tokens and ids of ``text`` with its blanks as ``<mask>``, the first ``max_len`` kept."""
        if add_cls:
            raise ValueError("A masked language model trained here reads no <cls> token.")
        tokens, ids, unknown = [], [], []
        for index, part in enumerate(BLANK.split(text)):
            if index and self.mask_id is not None:
                tokens, ids, unknown = tokens + [MASK], ids + [self.mask_id], unknown + [False]
            piece = self.inner.encode(part)
            tokens, ids, unknown = tokens + piece.tokens, ids + piece.ids, unknown + piece.unknown
        kept = len(ids) if max_len is None else max_len
        return Encoded(tokens[:kept], ids[:kept], unknown[:kept], len(ids) > kept, len(ids))

    def encode_batch(self, texts, max_len: int | None = None, add_cls: bool = False) -> list[Encoded]:
        return [self.encode(text, max_len, add_cls) for text in texts]

    def decode(self, ids: list[int]) -> str:
        """``ids`` as text: WordPiece's "##" continuations joined to the piece before, special tokens left out."""
        words: list[str] = []
        for index in ids:
            piece = self.vocab.itos[index]
            if piece in (PAD, CLS, MASK):
                continue
            if piece.startswith("##") and words:
                words[-1] += piece[2:]
            else:
                words.append(piece)
        return " ".join(words)

    def show(self, piece: str, index: int) -> str:
        """A vocabulary piece as the page shows it (WordPiece's "##" continuation kept: it says the piece
        joins the one before)."""
        return piece
