"""Reference models for the questions the weights cannot answer (tests only): with and without
positional encodings, with and without √d_model scaling, written as the course code writes them.

- :class:`CourseTransformer` is the attention-concepts notebook's ``Transformer`` (seed 002):
  ``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` (sequence-first), one shared
  ``input_embedding``, no positional encoding, no scaling, ``output_linear``. The notebook's
  forward passes no masks; a learner who trains it with teacher forcing adds the look-ahead and
  padding masks, as here.
- :class:`PlainTorchClassifier`: an ``nn.TransformerEncoder`` classifier with no positional
  encoding, scaled or not.
- :func:`course_classifier`: the course notebook's encoder classifier (seed 001) with its
  embedding changed: positions added or not, sinusoid base, √d_model scaling or not.

Each records its layers' softmax weights (B, H, T_q, T_k) so tests compare them with ours.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tests.checkpoint_references import CourseClassifier, torch_layer_weights
from tests.checkpoint_references_seq2seq import _weights, new_records


def sinusoid(max_len: int, d_model: int, base: float) -> torch.Tensor:
    """(max_len, d_model) sinusoid table with ``base`` in place of the paper's 10000, float32."""
    position = torch.arange(max_len, dtype=torch.float).unsqueeze(1)
    div_term = base ** (torch.arange(0, d_model, 2).float() / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position / div_term)
    table[:, 1::2] = torch.cos(position / div_term)
    return table


class CourseTransformer(nn.Module):
    """Seed 002's nn.Transformer-based model; forward((B, T_s) src, (B, T_t) tgt) -> (logits, records)."""

    def __init__(self, input_dim, d_model=32, n_heads=4, num_encoder_layers=2, num_decoder_layers=2, pad=1):
        super().__init__()
        self.pad = pad
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model=d_model, nhead=n_heads, dim_feedforward=64),
            num_layers=num_encoder_layers,
            enable_nested_tensor=False,
        )
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model=d_model, nhead=n_heads, dim_feedforward=64),
            num_layers=num_decoder_layers,
        )
        self.input_embedding = nn.Embedding(input_dim, d_model)
        self.output_linear = nn.Linear(d_model, input_dim)

    def forward(self, src, tgt):
        src_pad, tgt_pad = src == self.pad, tgt == self.pad
        causal = torch.triu(torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool), diagonal=1)  # True = blocked
        x = self.input_embedding(src.t())  # (T, B, D): no positional encoding, no scaling
        y = self.input_embedding(tgt.t())
        records = new_records()
        for layer in self.encoder.layers:
            records["encoder"].append(_weights(layer.self_attn, x, x, src_pad, None))
            x = layer(x, src_key_padding_mask=src_pad)
        for layer in self.decoder.layers:
            records["decoder_self"].append(_weights(layer.self_attn, y, y, tgt_pad, causal))
            h = layer.norm1(y + layer.self_attn(y, y, y, attn_mask=causal, key_padding_mask=tgt_pad)[0])
            records["cross"].append(_weights(layer.multihead_attn, h, x, src_pad, None))
            y = layer(y, x, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return self.output_linear(y).transpose(0, 1), records


class PlainTorchClassifier(nn.Module):
    """batch_first nn.TransformerEncoder, no positional encoding, embedding × √d_model if ``scale``,
    masked mean pooling, Linear to 2 classes. forward((B, T) ids) -> (logits, records)."""

    def __init__(self, vocab_size, scale: bool, d_model=32, nhead=4, d_ff=64, num_layers=2, pad_idx=1):
        super().__init__()
        self.pad_idx, self.factor = pad_idx, math.sqrt(d_model) if scale else 1.0
        self.embedding = nn.Embedding(vocab_size, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_ff, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.fc = nn.Linear(d_model, 2)

    def forward(self, x):
        pad = x == self.pad_idx
        h = self.embedding(x) * self.factor
        records = []
        for layer in self.encoder.layers:
            records.append(torch_layer_weights(layer, h, pad))
            h = layer(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1)
        return self.fc((h * keep).sum(1) / keep.sum(1)), records


class VariantEmbedding(nn.Module):
    """The course's TransformerEmbedding with the choices a learner may change; no new weights."""

    def __init__(self, tok_emb: nn.Module, d_model: int, positions: bool, base: float, scale: bool):
        super().__init__()
        self.tok_emb = tok_emb
        self.table = sinusoid(512, d_model, base) if positions else None  # a plain attribute: not saved
        self.factor = math.sqrt(d_model) if scale else 1.0

    def forward(self, x):
        h = self.tok_emb(x) * self.factor
        return h if self.table is None else h + self.table[: x.size(1)]


def course_classifier(vocab_size: int, positions=True, base=10000.0, scale=False, **sizes) -> CourseClassifier:
    """Seed 001's classifier (records in ``.records``, forward -> (B, 1) logit) with its embedding
    changed as asked; its state_dict keys are the notebook's own."""
    model = CourseClassifier(vocab_size, **sizes)
    embedding = model.encoder.transformer_embedding
    d_model = embedding.tok_emb.embedding.embedding_dim
    model.encoder.transformer_embedding = VariantEmbedding(embedding.tok_emb, d_model, positions, base, scale)
    return model
