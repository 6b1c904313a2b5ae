"""What a ``gemma3`` GGUF file says beyond a Llama one: its settings (read into the Hugging Face config that
``gguf_import.gguf_config`` builds), its tensor names, its token table kept in 8-bit blocks, and its tokenizer.

Settings (llama.cpp's keys; where a key is absent, the value llama.cpp itself uses for Gemma 3):
``gemma3.attention.key_length`` the head width (256), ``gemma3.attention.sliding_window`` the local layers'
window (512), ``gemma3.attention.sliding_window_pattern`` every how many layers one is global (6: layers 6, 12,
18), ``gemma3.rope.freq_base`` the global layers' rotary base (1,000,000) and ``gemma3.rope.freq_base_swa``
the local layers' (10,000).

The token table (``token_embd.weight``, Q8_0: blocks of 32 int8 values with an fp16 scale) is read as int8
values and float32 scales, not dequantised: its values are the same float32 products, in a quarter of the memory
(``core/packed.py``). Other types are dequantised as usual.

The tokenizer: SentencePiece-style BPE with byte fallback, spaces written ``▁`` (no space added before the
text), the merges rebuilt from the vocabulary with the file's order as their rank, and tokens of two or more
spaces respelled in ``▁`` — what transformers' GGUF reader builds for Gemma files.
"""

from __future__ import annotations

import numpy as np
import torch
from gguf import GGMLQuantizationType
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from ..core.packed import BLOCK
from .gguf_file import GGUFFile, TensorInfo
from .spm_merges import merges_from_scores

ARCHITECTURE = "gemma3"
TABLE = "token_embd.weight"
LAYER_NAMES = {  # llama.cpp's names inside blk.N -> Hugging Face's inside model.layers.N, where they differ from Llama's
    "ffn_norm": "pre_feedforward_layernorm",
    "post_attention_norm": "post_attention_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
}
Q8_0_BYTES = 2 + BLOCK  # one block: the fp16 scale, then 32 int8 values


def gemma3_settings(file: GGUFFile, count, number) -> dict:
    """The Hugging Face config keys a gemma3 file adds (``count``/``number``: gguf_import's checked readers of
    an integer and a positive number, ``(file, key, default)``)."""
    arch = ARCHITECTURE
    heads = count(file, f"{arch}.attention.head_count")
    settings = {
        "head_dim": count(file, f"{arch}.attention.key_length", count(file, f"{arch}.embedding_length") // heads),
        "sliding_window": count(file, f"{arch}.attention.sliding_window", 4096),
        "sliding_window_pattern": count(file, f"{arch}.attention.sliding_window_pattern", 6),
        "rope_local_base_freq": number(file, f"{arch}.rope.freq_base_swa", 10_000.0),
        "rope_theta": number(file, f"{arch}.rope.freq_base", 1_000_000.0),
        "hidden_act": "gelu_pytorch_tanh",
        "packed_embedding": packable(file),
    }
    value_length = file.metadata.get(f"{arch}.attention.value_length", settings["head_dim"])
    if value_length != settings["head_dim"]:
        settings["value_length"] = value_length  # refused by the shape check: values as wide as keys
    return settings


def packable(file: GGUFFile) -> bool:
    """Whether the token table stays in its 8-bit blocks: a Q8_0 table of whole blocks, tied to the output."""
    table = file.tensor(TABLE)
    return (
        table is not None
        and table.type == GGMLQuantizationType.Q8_0
        and len(table.shape) == 2
        and table.shape[-1] % BLOCK == 0
        and file.tensor("output.weight") is None
    )


def packed_meta(info: TensorInfo) -> dict[str, torch.Tensor]:
    """The packed table's two tensors as meta tensors of their shapes (nothing read)."""
    rows, width = info.shape
    return {
        "token_embd.values": torch.empty(rows, width, dtype=torch.int8, device="meta"),
        "token_embd.scales": torch.empty(rows, width // BLOCK, device="meta"),
    }


def packed_table(file: GGUFFile, info: TensorInfo) -> dict[str, torch.Tensor]:
    """The Q8_0 table as int8 values (V, D) and float32 scales (V, D / 32), each its own memory:
    scales[v, b] * values[v, 32 b + i] is exactly what ``gguf.quants.dequantize`` gives."""
    rows, width = info.shape
    data = np.memmap(file.path, dtype=np.uint8, mode="r", offset=info.start, shape=(info.nbytes,))
    blocks = data.reshape(rows, width // BLOCK, Q8_0_BYTES)
    values = np.ascontiguousarray(blocks[:, :, 2:]).view(np.int8).reshape(rows, width)
    scales = np.ascontiguousarray(blocks[:, :, :2]).view(np.float16).reshape(rows, width // BLOCK)
    del data
    return {
        "token_embd.values": torch.from_numpy(values),
        "token_embd.scales": torch.from_numpy(scales.astype(np.float32)),
    }


def gemma_tokenizer(meta: dict, tokens: list[str], file: str) -> Tokenizer:
    """The Gemma vocabulary of the GGUF file named ``file`` (see the module docstring)."""
    spelled = ["▁" * len(t) if " " in t and not t.strip() else t for t in tokens]
    vocab = {token: index for index, token in enumerate(spelled)}
    merges = merges_from_scores(vocab, {token: -float(index) for index, token in enumerate(spelled)})
    unk = meta.get("tokenizer.ggml.unknown_token_id", 3)
    unk_token = spelled[unk] if isinstance(unk, int) and 0 <= unk < len(spelled) else None
    model = models.BPE(vocab=vocab, merges=merges, unk_token=unk_token, fuse_unk=True, byte_fallback=True, dropout=None)
    tok = Tokenizer(model)
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return tok
