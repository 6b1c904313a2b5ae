"""Reference encoder-decoders written the way the tutorials write them (tests only).

Each ``forward(src, tgt)`` takes (B, T) ids and returns (logits (B, T_t, V_t), records) where
records holds per-layer softmax weights (B, H, T_q, T_k) under 'encoder', 'decoder_self', 'cross'.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tests.checkpoint_references import GammaBetaLayerNorm, sinusoid_table


def new_records() -> dict[str, list[torch.Tensor]]:
    return {"encoder": [], "decoder_self": [], "cross": []}


def masks(src, tgt, src_pad, tgt_pad):
    """(B, 1, 1, T_s) source keys, (B, 1, T_t, T_t) target keys AND look-ahead; True = may attend."""
    src_mask = (src != src_pad)[:, None, None, :]
    causal = torch.tril(torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool))
    tgt_mask = (tgt != tgt_pad)[:, None, None, :] & causal
    return src_mask, tgt_mask


# ---- the vanilla walkthrough (seed 003) --------------------------------------------------------------
class VanillaPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))  # (1, max_len, d_model), saved in the state_dict

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class VanillaMultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, records):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.fc = nn.Linear(d_model, d_model)
        self.records = records

    def forward(self, Q, K, V, mask=None):
        b = Q.size(0)
        q = self.W_Q(Q).view(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        k = self.W_K(K).view(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        v = self.W_V(V).view(b, -1, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attn = torch.softmax(scores, dim=-1)
        self.records.append(attn)
        out = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, -1, self.d_model)
        return self.fc(out), attn


class VanillaFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.linear2(self.relu(self.linear1(x)))


class VanillaEncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, records):
        super().__init__()
        self.self_attn = VanillaMultiHeadAttention(d_model, n_heads, records["encoder"])
        self.ffn = VanillaFeedForward(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout1, self.dropout2 = nn.Dropout(0.1), nn.Dropout(0.1)

    def forward(self, x, mask=None):
        attn_out, _ = self.self_attn(x, x, x, mask=mask)
        x = self.norm1(x + self.dropout1(attn_out))
        return self.norm2(x + self.dropout2(self.ffn(x)))


class VanillaDecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, records):
        super().__init__()
        self.self_attn = VanillaMultiHeadAttention(d_model, n_heads, records["decoder_self"])
        self.enc_dec_attn = VanillaMultiHeadAttention(d_model, n_heads, records["cross"])
        self.ffn = VanillaFeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(0.1), nn.Dropout(0.1), nn.Dropout(0.1)

    def forward(self, x, enc_out, tgt_mask=None, memory_mask=None):
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask=tgt_mask)[0]))
        x = self.norm2(x + self.dropout2(self.enc_dec_attn(x, enc_out, enc_out, mask=memory_mask)[0]))
        return self.norm3(x + self.dropout3(self.ffn(x)))


class VanillaStack(nn.Module):
    """Encoder or Decoder of the walkthrough: embedding + pe + dropout + layers."""

    def __init__(self, vocab_size, d_model, n_heads, d_ff, num_layers, records, decoder, max_len=5000):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = VanillaPositionalEncoding(d_model, max_len)
        layer = VanillaDecoderLayer if decoder else VanillaEncoderLayer
        self.layers = nn.ModuleList(layer(d_model, n_heads, d_ff, records) for _ in range(num_layers))
        self.dropout = nn.Dropout(0.1)


class VanillaTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=32, n_heads=4, d_ff=64, num_layers=2, pad=1):
        super().__init__()
        self.records = new_records()
        self.pad = pad
        self.encoder = VanillaStack(src_vocab_size, d_model, n_heads, d_ff, num_layers, self.records, False)
        self.decoder = VanillaStack(tgt_vocab_size, d_model, n_heads, d_ff, num_layers, self.records, True)
        self.fc = nn.Linear(d_model, tgt_vocab_size, bias=False)

    def forward(self, src, tgt):
        src_mask, tgt_mask = masks(src, tgt, self.pad, self.pad)
        x = self.encoder.dropout(self.encoder.pos_encoding(self.encoder.embedding(src)))
        for layer in self.encoder.layers:
            x = layer(x, mask=src_mask)
        y = self.decoder.dropout(self.decoder.pos_encoding(self.decoder.embedding(tgt)))
        for layer in self.decoder.layers:
            y = layer(y, x, tgt_mask=tgt_mask, memory_mask=src_mask)
        return self.fc(y), self.records


# ---- w_q/w_k/w_v/w_concat with gamma/beta LayerNorm (seed 004, upstream's working split/concat) ------
class ConcatAttention(nn.Module):
    def __init__(self, d_model, n_head, records):
        super().__init__()
        self.n_head = n_head
        self.w_q, self.w_k, self.w_v = (
            nn.Linear(d_model, d_model),
            nn.Linear(d_model, d_model),
            nn.Linear(d_model, d_model),
        )
        self.w_concat = nn.Linear(d_model, d_model)
        self.records = records

    def split(self, tensor):
        b, length, d_model = tensor.size()
        return tensor.view(b, length, self.n_head, d_model // self.n_head).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        q, k, v = self.split(self.w_q(q)), self.split(self.w_k(k)), self.split(self.w_v(v))
        score = (q @ k.transpose(2, 3)) / math.sqrt(k.size(-1))
        if mask is not None:
            score = score.masked_fill(mask == 0, -10000)
        score = torch.softmax(score, dim=-1)
        self.records.append(score)
        out = score @ v
        b, head, length, d_tensor = out.size()
        return self.w_concat(out.transpose(1, 2).contiguous().view(b, length, head * d_tensor))


class ConcatFeedForward(nn.Module):
    def __init__(self, d_model, hidden):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, hidden), nn.Linear(hidden, d_model)
        self.relu, self.dropout = nn.ReLU(), nn.Dropout(0.1)

    def forward(self, x):
        return self.linear2(self.dropout(self.relu(self.linear1(x))))


class ConcatEncoderLayer(nn.Module):
    def __init__(self, d_model, ffn_hidden, n_head, records):
        super().__init__()
        self.attention = ConcatAttention(d_model, n_head, records["encoder"])
        self.norm1, self.dropout1 = GammaBetaLayerNorm(d_model, 1e-12), nn.Dropout(0.1)
        self.ffn = ConcatFeedForward(d_model, ffn_hidden)
        self.norm2, self.dropout2 = GammaBetaLayerNorm(d_model, 1e-12), nn.Dropout(0.1)

    def forward(self, x, src_mask):
        x = self.dropout1(self.norm1(self.attention(q=x, k=x, v=x, mask=src_mask) + x))
        return self.dropout2(self.norm2(self.ffn(x) + x))


class ConcatDecoderLayer(nn.Module):
    def __init__(self, d_model, ffn_hidden, n_head, records):
        super().__init__()
        self.self_attention = ConcatAttention(d_model, n_head, records["decoder_self"])
        self.norm1, self.dropout1 = GammaBetaLayerNorm(d_model, 1e-12), nn.Dropout(0.1)
        self.enc_dec_attention = ConcatAttention(d_model, n_head, records["cross"])
        self.norm2, self.dropout2 = GammaBetaLayerNorm(d_model, 1e-12), nn.Dropout(0.1)
        self.ffn = ConcatFeedForward(d_model, ffn_hidden)
        self.norm3, self.dropout3 = GammaBetaLayerNorm(d_model, 1e-12), nn.Dropout(0.1)

    def forward(self, dec, enc, trg_mask, src_mask):
        x = self.dropout1(self.norm1(self.self_attention(q=dec, k=dec, v=dec, mask=trg_mask) + dec))
        x = self.dropout2(self.norm2(self.enc_dec_attention(q=x, k=enc, v=enc, mask=src_mask) + x))
        return self.dropout3(self.norm3(self.ffn(x) + x))


class ConcatTransformer(nn.Module):
    """Encoder (embed, layers) and Decoder (embed, layers, linear); the sinusoid is not saved."""

    def __init__(self, src_vocab, tgt_vocab, d_model=32, n_head=4, ffn_hidden=48, n_layers=2, pad=1):
        super().__init__()
        self.records = new_records()
        self.pad, self.d_model = pad, d_model
        self.encoder = nn.Module()
        self.encoder.embed = nn.Embedding(src_vocab, d_model, padding_idx=pad)
        self.encoder.layers = nn.ModuleList(
            ConcatEncoderLayer(d_model, ffn_hidden, n_head, self.records) for _ in range(n_layers)
        )
        self.decoder = nn.Module()
        self.decoder.embed = nn.Embedding(tgt_vocab, d_model, padding_idx=pad)
        self.decoder.layers = nn.ModuleList(
            ConcatDecoderLayer(d_model, ffn_hidden, n_head, self.records) for _ in range(n_layers)
        )
        self.decoder.linear = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, trg):
        src_mask, trg_mask = masks(src, trg, self.pad, self.pad)
        x = self.encoder.embed(src) + sinusoid_table(src.size(1), self.d_model)
        for layer in self.encoder.layers:
            x = layer(x, src_mask)
        y = self.decoder.embed(trg) + sinusoid_table(trg.size(1), self.d_model)
        for layer in self.decoder.layers:
            y = layer(y, x, trg_mask, src_mask)
        return self.decoder.linear(y), self.records


# ---- PyTorch's translation tutorial: nn.Transformer, sequence-first -----------------------------------
class TutorialTokenEmbedding(nn.Module):
    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class TutorialPositionalEncoding(nn.Module):
    def __init__(self, emb_size, maxlen=100):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))  # (maxlen, 1, emb)

    def forward(self, token_embedding):
        return token_embedding + self.pos_embedding[: token_embedding.size(0), :]


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, emb_size=32, nhead=4, layers=2, d_ff=64, pad=1):
        super().__init__()
        self.pad = pad
        self.transformer = nn.Transformer(
            d_model=emb_size,
            nhead=nhead,
            num_encoder_layers=layers,
            num_decoder_layers=layers,
            dim_feedforward=d_ff,
            dropout=0.1,
        )
        self.generator = nn.Linear(emb_size, tgt_vocab)
        self.src_tok_emb = TutorialTokenEmbedding(src_vocab, emb_size)
        self.tgt_tok_emb = TutorialTokenEmbedding(tgt_vocab, emb_size)
        self.positional_encoding = TutorialPositionalEncoding(emb_size)

    def forward(self, src, tgt):  # (B, T) ids; nn.Transformer runs on (T, B, D)
        src_pad, tgt_pad = src == self.pad, tgt == self.pad
        causal = torch.triu(torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool), diagonal=1)  # True = blocked
        x = self.positional_encoding(self.src_tok_emb(src.t()))
        y = self.positional_encoding(self.tgt_tok_emb(tgt.t()))
        records = new_records()
        for layer in self.transformer.encoder.layers:
            records["encoder"].append(_weights(layer.self_attn, x, x, src_pad, None))
            x = layer(x, src_key_padding_mask=src_pad)
        memory = self.transformer.encoder.norm(x)
        for layer in self.transformer.decoder.layers:
            records["decoder_self"].append(_weights(layer.self_attn, y, y, tgt_pad, causal))
            h = layer.norm1(y + layer.self_attn(y, y, y, attn_mask=causal, key_padding_mask=tgt_pad)[0])
            records["cross"].append(_weights(layer.multihead_attn, h, memory, src_pad, None))
            y = layer(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        out = self.transformer.decoder.norm(y)
        return self.generator(out).transpose(0, 1), records


def _weights(attn: nn.MultiheadAttention, query, memory, pad, attn_mask) -> torch.Tensor:
    _, w = attn(
        query, memory, memory, key_padding_mask=pad, attn_mask=attn_mask, need_weights=True, average_attn_weights=False
    )
    return w
