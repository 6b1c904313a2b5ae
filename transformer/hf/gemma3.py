"""Gemma 3's text decoder (``gemma3``: Google's Gemma 3 270M as llama.cpp writes it to GGUF) onto our
decoder-only language model: one row of layer choices, no branch in the layers.

What Gemma 3 computes, and the config option of ours that does each:

- the token embedding times √d_model (``scale_embedding``), no position table (``positional="rotary"``);
- RMSNorm everywhere, with the weight as the file stores it: Gemma's norm scales by (1 + w), and llama.cpp's
  converter writes 1 + w into the file, so our plain RMSNorm with the stored weight computes the same
  (transformers' GGUF loader subtracts the 1 again and adds it back in its norm);
- pre- and post-norms around both sublayers: x + post_norm(attention(norm(x))), then the same around the
  feed-forward (``norm_first`` with ``sublayer_post_norm``);
- a per-head RMSNorm on the queries and keys, before rotary (``qk_norm``), heads of 256 dimensions that do not
  split d_model (``attention_head_dim``), 4 query heads sharing 1 key/value head (``num_kv_heads``);
- the query scale 1/√head_dim (Gemma's ``query_pre_attn_scalar`` is the head width for Gemma 3 up to 12B;
  llama.cpp uses 1/√key_length for them), no soft-capping of scores or logits (Gemma 3 has none);
- the gated feed-forward down(gelu_tanh(gate(x)) · up(x)) (``gated_ffn``, ``activation="gelu_tanh"``);
- sliding-window local layers (each query sees its last ``sliding_window`` keys, itself included) and every
  ``pattern``-th layer global (``local_layers``, ``local_window``), each kind with its rotary base
  (``local_pe_base`` for the local layers, ``pe_base`` for the global ones);
- the output layer tied to the embedding; with ``packed_embedding`` the table stays in its 8-bit blocks.

The Hugging Face names are those transformers gives (``model.layers.N.pre_feedforward_layernorm`` ...);
``gguf_import`` renames llama.cpp's tensors to them.
"""

from __future__ import annotations

import torch

from ..core.config import LIMITS
from ..core.decoder import KIND as LANGUAGE_MODEL_KIND
from .folder import CONFIG_FILE
from .mapping import LANGUAGE_MODEL, CheckpointError, Imported, StateMapper, model_config, setting, unused_note

# our name inside layers.N -> Hugging Face's inside model.layers.N
LAYER_TENSORS = {
    "attn_block.norm.weight": "input_layernorm.weight",
    "attn_block.post_norm.weight": "post_attention_layernorm.weight",
    "ffn_block.norm.weight": "pre_feedforward_layernorm.weight",
    "ffn_block.post_norm.weight": "post_feedforward_layernorm.weight",
    "self_attn.q_norm.weight": "self_attn.q_norm.weight",
    "self_attn.k_norm.weight": "self_attn.k_norm.weight",
    "self_attn.w_q.weight": "self_attn.q_proj.weight",
    "self_attn.w_k.weight": "self_attn.k_proj.weight",
    "self_attn.w_v.weight": "self_attn.v_proj.weight",
    "self_attn.w_o.weight": "self_attn.o_proj.weight",
    "ffn.gate.weight": "mlp.gate_proj.weight",
    "ffn.linear1.weight": "mlp.up_proj.weight",
    "ffn.linear2.weight": "mlp.down_proj.weight",
}
PACKED_TABLE = ("values", "scales")  # the token table kept in 8-bit blocks (core/packed.py)


def import_gemma3(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    """A Gemma 3 text decoder's config and weights as our language model's (see the module docstring)."""
    config, notes = gemma3_config(hf)
    m = StateMapper(weights, files, "model.")
    if config.packed_embedding:
        for part in PACKED_TABLE:
            m.put(f"embedding.tokens.{part}", f"embed_tokens.{part}")
    else:
        m.put("embedding.tokens.weight", "embed_tokens.weight")
    for i in range(config.num_layers):
        for ours, theirs in LAYER_TENSORS.items():
            m.put(f"layers.{i}.{ours}", f"layers.{i}.{theirs}")
    m.put("final_norm.weight", "norm.weight")
    if not config.tie_output_embedding:
        m.put("output.weight", "lm_head.weight")
    return Imported(config, m.state, m.sources, LANGUAGE_MODEL, notes=tuple(notes) + tuple(unused_note(m)))


def gemma3_config(hf: dict):
    """(our config, notes) from a Gemma 3 text config (the keys transformers' Gemma3TextConfig reads, and
    ``packed_embedding`` where the token table stays in 8-bit blocks)."""
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if hf.get(key):
            raise CheckpointError(f"{CONFIG_FILE}: {key} {hf[key]!r:.20}; this app runs Gemma 3 without soft-capping.")
    d_model, heads = setting(hf, "hidden_size"), setting(hf, "num_attention_heads")
    head_dim = setting(hf, "head_dim", d_model // heads)
    layers = setting(hf, "num_hidden_layers")
    length = setting(hf, "max_position_embeddings", 32768)
    notes = []
    if length > LIMITS["max_len"]:
        notes.append(f"Inputs are limited to {LIMITS['max_len']:,} tokens (the model takes {length:,}).")
        length = LIMITS["max_len"]
    window = setting(hf, "sliding_window", 4096)
    pattern = setting(hf, "sliding_window_pattern", 6)
    local = tuple(i for i in range(layers) if (i + 1) % pattern) if window < length else ()
    vocab = setting(hf, "vocab_size")
    eos, bos, pad = (
        _id(hf, key, vocab, default) for key, default in (("eos_token_id", 1), ("bos_token_id", 2), ("pad_token_id", 0))
    )
    config = model_config(
        kind=LANGUAGE_MODEL_KIND,
        vocab_size=vocab,
        d_model=d_model,
        num_heads=heads,
        num_kv_heads=setting(hf, "num_key_value_heads", heads),
        attention_head_dim=0 if head_dim * heads == d_model else head_dim,
        num_layers=layers,
        d_ff=setting(hf, "intermediate_size"),
        max_len=length,
        dropout=0.0,
        activation="gelu_tanh",
        gated_ffn=True,
        positional="rotary",
        rotary_style="halves",
        pe_base=setting(hf, "rope_theta", 1_000_000.0, float),
        local_pe_base=setting(hf, "rope_local_base_freq", 10_000.0, float),
        local_window=window if local else 0,
        local_layers=local,
        scale_embedding=True,
        norm_style="rms",
        norm_first=True,
        sublayer_post_norm=True,
        qk_norm=True,
        final_norm=True,
        layer_norm_eps=setting(hf, "rms_norm_eps", 1e-6, float),
        qkv_bias=False,
        out_bias=False,
        ffn_bias=False,
        tie_output_embedding=bool(hf.get("tie_word_embeddings", True)),
        packed_embedding=bool(hf.get("packed_embedding", False)),
        pad_id=pad,
        bos_id=bos,
        eos_id=eos,
        label_names=("next-token", "none"),
        tokenizer="byte_bpe",
    )
    return config, notes


def _id(hf: dict, key: str, vocab: int, default: int) -> int:
    value = hf.get(key, default)
    if isinstance(value, list) and value:
        value = value[0]
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < vocab
    return value if ok else default
