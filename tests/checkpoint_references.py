"""Reference encoder classifiers written the way the tutorials write them (tests only).

Each follows one seed's model code (names, order of operations, LayerNorm, mask fill), plus a
``records`` list that collects each layer's softmax weights (B, H, T, T) so tests can compare
them with ours. Their ``state_dict()`` is what a learner saves.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def sinusoid_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…), computed in float32 as the notebooks do."""
    position = torch.arange(max_len, dtype=torch.float).unsqueeze(1)
    div_term = 10000 ** (torch.arange(0, d_model, 2).float() / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position / div_term)
    table[:, 1::2] = torch.cos(position / div_term)
    return table


# ---- the course notebook's encoder classifier (seed 001) --------------------------------------------
class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)

    def forward(self, x):
        return self.embedding(x)


class PositionalEncoding(nn.Module):
    def __init__(self, max_length, embedding_dim):
        super().__init__()
        self.positional_encoding = sinusoid_table(max_length, embedding_dim)  # a plain attribute: not saved

    def forward(self, x):
        return self.positional_encoding[: x.size(1)].detach()


class TransformerEmbedding(nn.Module):
    def __init__(self, vocab_size, embedding_dim, max_len):
        super().__init__()
        self.tok_emb = TokenEmbedding(vocab_size, embedding_dim)
        self.pos_emb = PositionalEncoding(max_len, embedding_dim)

    def forward(self, x):
        return self.tok_emb(x) + self.pos_emb(x)


class CourseAttention(nn.Module):
    """ScaledDotProductAttention + MultiHeadAttention of the notebook (fill -1e10)."""

    def __init__(self, embedding_dim, num_heads, records):
        super().__init__()
        self.num_heads, self.attention_dim = num_heads, embedding_dim // num_heads
        self.scale = torch.sqrt(torch.FloatTensor([self.attention_dim]))
        self.Wq = nn.Linear(embedding_dim, embedding_dim)
        self.Wk = nn.Linear(embedding_dim, embedding_dim)
        self.Wv = nn.Linear(embedding_dim, embedding_dim)
        self.Wo = nn.Linear(embedding_dim, embedding_dim)
        self.records = records

    def forward(self, query, key, value, mask=None):
        b, t = query.size(0), query.size(1)
        query = self.Wq(query).reshape(b, -1, self.num_heads, self.attention_dim).transpose(1, 2)
        key = self.Wk(key).reshape(b, -1, self.num_heads, self.attention_dim).transpose(1, 2)
        value = self.Wv(value).reshape(b, -1, self.num_heads, self.attention_dim).transpose(1, 2)
        score = torch.matmul(query, key.transpose(-2, -1)) / self.scale
        if mask is not None:
            score = score.masked_fill(mask == 0, -1e10)
        distribution = torch.softmax(score, dim=-1)
        self.records.append(distribution)
        values = torch.matmul(distribution, value).transpose(1, 2).reshape(b, t, self.num_heads * self.attention_dim)
        return self.Wo(values)


class FeedForwardNeuralNetwork(nn.Module):
    def __init__(self, embedding_dim, feed_forward_dim, drop_prob):
        super().__init__()
        self.W1 = nn.Linear(embedding_dim, feed_forward_dim)
        self.W2 = nn.Linear(feed_forward_dim, embedding_dim)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(drop_prob)

    def forward(self, inputs):
        return self.W2(self.dropout(self.relu(self.W1(inputs))))


class LayerNormalization(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.layer_norm = nn.LayerNorm(num_features)

    def forward(self, x):
        return self.layer_norm(x)


class CourseEncoderLayer(nn.Module):
    def __init__(self, embedding_dim, feed_forward_dim, num_heads, drop_prob, records):
        super().__init__()
        self.multi_head_attention = CourseAttention(embedding_dim, num_heads, records)
        self.norm1 = LayerNormalization(embedding_dim)
        self.dropout1 = nn.Dropout(p=drop_prob)
        self.feed_forward_neural_network = FeedForwardNeuralNetwork(embedding_dim, feed_forward_dim, drop_prob)
        self.norm2 = LayerNormalization(embedding_dim)
        self.dropout2 = nn.Dropout(p=drop_prob)

    def forward(self, x, padding_mask):
        _x = x
        x = self.dropout1(self.multi_head_attention(x, x, x, padding_mask))
        x = self.norm1(x + _x)
        _x = x
        x = self.dropout2(self.feed_forward_neural_network(x))
        return self.norm2(x + _x)


class CourseEncoder(nn.Module):
    def __init__(
        self, vocab_size, sequence_length, embedding_dim, feed_forward_dim, num_heads, num_layers, drop_prob, records
    ):
        super().__init__()
        self.transformer_embedding = TransformerEmbedding(vocab_size, embedding_dim, sequence_length)
        self.encoder_layers = nn.ModuleList(
            CourseEncoderLayer(embedding_dim, feed_forward_dim, num_heads, drop_prob, records)
            for _ in range(num_layers)
        )

    def forward(self, x, padding_mask):
        x = self.transformer_embedding(x)
        for layer in self.encoder_layers:
            x = layer(x, padding_mask)
        return x


class CourseClassifier(nn.Module):
    """The learner's own head (the notebook leaves it to them): masked mean, MLP, one logit."""

    def __init__(
        self,
        vocab_size,
        sequence_length=512,
        embedding_dim=32,
        feed_forward_dim=64,
        num_heads=4,
        num_layers=2,
        drop_prob=0.1,
        pad_idx=1,
    ):
        super().__init__()
        self.records: list[torch.Tensor] = []
        self.pad_idx = pad_idx
        self.encoder = CourseEncoder(
            vocab_size, sequence_length, embedding_dim, feed_forward_dim, num_heads, num_layers, drop_prob, self.records
        )
        self.classifier = nn.Sequential(
            nn.Linear(embedding_dim, 16), nn.ReLU(), nn.Dropout(drop_prob), nn.Linear(16, 1)
        )

    def forward(self, x):
        keep = x != self.pad_idx
        padding_mask = keep.unsqueeze(1).repeat(1, x.size(1), 1).unsqueeze(1)  # (B, 1, T, T)
        h = self.encoder(x, padding_mask)
        pooled = (h * keep.unsqueeze(-1)).sum(1) / keep.sum(1, keepdim=True)
        return self.classifier(pooled)  # (B, 1)


# ---- the fused qkv_layer encoder (seed 000), wrapped by a learner with an embedding and a head ----
class FusedAttention(nn.Module):
    def __init__(self, d_model, num_heads, records):
        super().__init__()
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.qkv_layer = nn.Linear(d_model, 3 * d_model)
        self.linear_layer = nn.Linear(d_model, d_model)
        self.records = records

    def forward(self, x, mask=None):
        batch_size, seq_len, _ = x.size()
        qkv = self.qkv_layer(x).view(batch_size, seq_len, self.num_heads, 3 * self.head_dim)
        q, k, v = qkv.chunk(3, dim=-1)
        q, k, v = [t.permute(0, 2, 1, 3) for t in (q, k, v)]
        scaled = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size()[-1])
        if mask is not None:
            scaled += mask  # an additive mask: 0 or a large negative number
        attention = F.softmax(scaled, dim=-1)
        self.records.append(attention)
        values = torch.matmul(attention, v).permute(0, 2, 1, 3).contiguous().view(batch_size, seq_len, -1)
        return self.linear_layer(values)


class GammaBetaLayerNorm(nn.Module):
    """LayerNormalization of seeds 000 and 004: gamma * (x - mean) / (std + eps) + beta, unbiased std."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.gamma * (x - mean) / (std + self.eps) + self.beta


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class FusedEncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout, records):
        super().__init__()
        self.self_attn = FusedAttention(d_model, num_heads, records)
        self.norm1 = GammaBetaLayerNorm(d_model)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm2 = GammaBetaLayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        x2 = self.norm1(x + self.self_attn(x, mask))
        return self.norm2(x2 + self.ffn(x2))


class FusedEncoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout, num_layers, records):
        super().__init__()
        self.layers = nn.ModuleList(
            FusedEncoderLayer(d_model, num_heads, d_ff, dropout, records) for _ in range(num_layers)
        )
        self.norm = GammaBetaLayerNorm(d_model)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class FusedClassifier(nn.Module):
    """nn.Embedding + sinusoid (x includes positional encoding) + the seed's Encoder + mean + Linear."""

    def __init__(self, vocab_size, d_model=24, num_heads=3, d_ff=48, num_layers=2, pad_idx=1, classes=2):
        super().__init__()
        self.records: list[torch.Tensor] = []
        self.pad_idx = pad_idx
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_idx)
        self.encoder = FusedEncoder(d_model, num_heads, d_ff, 0.1, num_layers, self.records)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        keep = x != self.pad_idx
        mask = torch.zeros(x.shape, dtype=torch.float).masked_fill(~keep, -1e9)[:, None, None, :]  # (B, 1, 1, T)
        h = self.embedding(x) + sinusoid_table(x.size(1), self.embedding.embedding_dim)
        h = self.encoder(h, mask)
        pooled = (h * keep.unsqueeze(-1)).sum(1) / keep.sum(1, keepdim=True)
        return self.head(pooled)


# ---- classifiers on PyTorch's nn.TransformerEncoder ----------------------------------------------
def torch_layer_weights(layer: nn.TransformerEncoderLayer, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """The per-head softmax weights (B, H, T, T) that ``layer`` computes for input ``x``."""
    h = layer.norm1(x) if layer.norm_first else x
    _, weights = layer.self_attn(h, h, h, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
    return weights


class TorchEncoderClassifier(nn.Module):
    """batch_first: embedding (unscaled) + learned position table + pre-norm GELU encoder with a final
    LayerNorm + first-token pooling + Linear to 3 classes."""

    def __init__(self, vocab_size, d_model=32, nhead=4, d_ff=64, num_layers=2, max_len=40, pad_idx=1):
        super().__init__()
        self.pad_idx = pad_idx
        self.tok_embedding = nn.Embedding(vocab_size, d_model)
        self.pos_embedding = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, d_ff, dropout=0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.fc = nn.Linear(d_model, 3)

    def forward(self, x):
        pad = x == self.pad_idx
        h = self.tok_embedding(x) + self.pos_embedding.weight[: x.size(1)]
        records = []
        for layer in self.encoder.layers:
            records.append(torch_layer_weights(layer, h, pad))
            h = layer(h, src_key_padding_mask=pad)
        h = self.encoder.norm(h)
        return self.fc(h[:, 0]), records


class SeqFirstPositionalEncoding(nn.Module):
    """PyTorch's tutorial encoding: a (max_len, 1, d_model) buffer 'pe' for sequence-first input."""

    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):  # x (T, B, D)
        return x + self.pe[: x.size(0)]


class SeqFirstClassifier(nn.Module):
    """Sequence-first (batch_first=False): embedding × √d_model + 'pe' buffer + post-norm ReLU encoder
    + masked mean + Linear to 2 classes."""

    def __init__(self, vocab_size, d_model=32, nhead=2, d_ff=48, num_layers=2, pad_idx=1):
        super().__init__()
        self.pad_idx, self.d_model = pad_idx, d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoder = SeqFirstPositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_ff, dropout=0.1)
        self.transformer_encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(d_model, 2)

    def forward(self, x):  # x (B, T) ids; the model runs on (T, B, D)
        pad = x == self.pad_idx
        h = self.pos_encoder(self.embedding(x.t()) * math.sqrt(self.d_model))
        records = []
        for layer in self.transformer_encoder.layers:
            records.append(torch_layer_weights(layer, h, pad))
            h = layer(h, src_key_padding_mask=pad)
        keep = (~pad).t().unsqueeze(-1)  # (T, B, 1)
        pooled = (h * keep).sum(0) / keep.sum(0)
        return self.classifier(pooled), records
