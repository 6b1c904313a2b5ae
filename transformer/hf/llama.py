"""Llama, Mistral and Qwen2 (``LlamaForCausalLM``, ``MistralForCausalLM``, ``Qwen2ForCausalLM``) onto
our decoder-only language model: one row of layer choices, no branch in the layers.

All three: token embedding without a position table; pre-norm layers with RMSNorm (input_layernorm,
post_attention_layernorm); rotary positions on every head's queries and keys (the "halves" pairing, base
``rope_theta``); grouped-query attention (``num_key_value_heads``); SwiGLU feed-forward (gate_proj,
up_proj, down_proj); a final RMSNorm and an output layer, tied to the embedding or not
(``tie_word_embeddings``). Biases: none (Llama's ``attention_bias``/``mlp_bias`` add them), Qwen2's
q/k/v projections have them. Hugging Face's Linear layers store (out, in) as ours do: nothing is transposed.
"""

from __future__ import annotations

import torch

from ..core.config import LIMITS
from ..core.decoder import KIND as LANGUAGE_MODEL_KIND
from .folder import CONFIG_FILE
from .mapping import (
    LANGUAGE_MODEL,
    CheckpointError,
    Imported,
    StateMapper,
    model_config,
    setting,
    token_id,
    unused_note,
)

# per family: q/k/v biases (None: config.json's attention_bias), o_proj bias, feed-forward biases
BIASES = {"llama": (None, None, "mlp_bias"), "mistral": (False, False, False), "qwen2": (True, False, False)}


def import_llama(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    """A Llama-family folder's config and weights as our language model's (see the module docstring)."""
    config, notes = _config(hf)
    m = StateMapper(weights, files, "model.")
    m.put("embedding.tokens.weight", "embed_tokens.weight")
    for i in range(config.num_layers):
        _layer(m, i, config)
    m.put("final_norm.weight", "norm.weight")
    if not config.tie_output_embedding:
        m.put("output.weight", "lm_head.weight")
    return Imported(config, m.state, m.sources, LANGUAGE_MODEL, notes=tuple(notes) + tuple(unused_note(m)))


def _config(hf: dict):
    """(our config, notes for the user) from a Llama-family config.json."""
    family = hf.get("model_type", "llama")
    d_model, heads = setting(hf, "hidden_size"), setting(hf, "num_attention_heads")
    head_dim = hf.get("head_dim")
    if head_dim not in (None, d_model // heads):
        raise CheckpointError(
            f"{CONFIG_FILE}: head_dim {head_dim} is not hidden_size / num_attention_heads ({d_model // heads}); "
            "this app's heads split the hidden size evenly."
        )
    if setting(hf, "hidden_act", "silu", str) != "silu":
        raise CheckpointError(
            f"{CONFIG_FILE}: hidden_act {hf['hidden_act']!r}; this app imports the SiLU (SwiGLU) ones."
        )
    max_len, notes = _context(hf, family)
    vocab = setting(hf, "vocab_size")
    eos = _first_id(hf, "eos_token_id", vocab)
    bos = _first_id(hf, "bos_token_id", vocab)
    qkv, out, ffn = (_bias(hf, flag) for flag in BIASES.get(family, BIASES["llama"]))
    config = model_config(
        kind=LANGUAGE_MODEL_KIND,
        vocab_size=vocab,
        d_model=d_model,
        num_heads=heads,
        num_kv_heads=setting(hf, "num_key_value_heads", heads),
        num_layers=setting(hf, "num_hidden_layers"),
        d_ff=setting(hf, "intermediate_size"),
        max_len=max_len,
        dropout=0.0,
        activation="silu",
        gated_ffn=True,
        positional="rotary",
        rotary_style="halves",
        pe_base=_rope_theta(hf),
        norm_style="rms",
        norm_first=True,
        final_norm=True,
        layer_norm_eps=setting(hf, "rms_norm_eps", 1e-6, float),
        qkv_bias=qkv,
        out_bias=out,
        ffn_bias=ffn,
        tie_output_embedding=bool(hf.get("tie_word_embeddings", False)),
        pad_id=_first_id(hf, "pad_token_id", vocab, eos if eos is not None else 0),
        bos_id=bos if bos is not None else eos,
        eos_id=eos,
        label_names=("next-token", "none"),
        tokenizer="byte_bpe",
        **_local_layers(hf, family, max_len),
    )
    return config, notes


def _bias(hf: dict, flag: bool | str | None) -> bool:
    """A family's fixed bias choice, or config.json's flag (``attention_bias``, ``mlp_bias``: off unless set)."""
    if isinstance(flag, bool):
        return flag
    return bool(hf.get(flag or "attention_bias", False))


def _first_id(hf: dict, key: str, vocab: int, default: int | None = None) -> int | None:
    """A special token's id (the first of a list, as Llama 3's eos list), when it is inside the vocabulary."""
    value = hf.get(key)
    if isinstance(value, list) and value:
        value = value[0]
    index = token_id({key: value}, key, -1)
    return index if 0 <= index < vocab else default


def _rope_theta(hf: dict) -> float:
    """Rotary base θ: ``rope_parameters.rope_theta`` (transformers 5) or ``rope_theta``; scaled rotary
    variants (Llama 3.1's "llama3", "linear", "dynamic", "yarn") are refused, not approximated."""
    params = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise CheckpointError(f"{CONFIG_FILE}: rope_parameters must be an object.")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind != "default":
        raise CheckpointError(
            f"{CONFIG_FILE}: rotary positions of type {kind!r} (scaled for long contexts) are not supported here; "
            "this app imports the plain rotary positions (rope_type 'default')."
        )
    theta = params.get("rope_theta", hf.get("rope_theta", 10000.0))
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise CheckpointError(f"{CONFIG_FILE}: rope_theta must be a positive number, not {theta!r:.40}.")
    return float(theta)


def _local_layers(hf: dict, family: str, length: int) -> dict:
    """Mistral's sliding window as local layers (every layer sees the last ``sliding_window`` keys, its own
    included, as transformers' Mistral attends); {} when there is none or it spans the whole context."""
    window = hf.get("sliding_window")
    if family != "mistral" or not isinstance(window, int) or isinstance(window, bool) or not 0 < window < length:
        return {}
    return {"local_window": window, "local_layers": tuple(range(setting(hf, "num_hidden_layers")))}


def _context(hf: dict, family: str) -> tuple[int, list[str]]:
    """(the longest input we take, notes): max_position_embeddings, within this app's cap and, where
    Qwen2 attends over a sliding window, within the window (longer inputs would attend differently there;
    Mistral's window is kept as local layers instead)."""
    length = setting(hf, "max_position_embeddings", 2048)
    notes = []
    window = hf.get("sliding_window")
    sliding = window if family == "qwen2" and hf.get("use_sliding_window") else None
    if isinstance(sliding, int) and not isinstance(sliding, bool) and 0 < sliding < length:
        notes.append(
            f"Inputs are limited to the sliding window of {sliding} tokens (max_position_embeddings {length})."
        )
        length = sliding
    if length > LIMITS["max_len"]:
        notes.append(f"Inputs are limited to {LIMITS['max_len']:,} tokens (the model takes {length:,}).")
        length = LIMITS["max_len"]
    return length, notes


def _layer(m: StateMapper, i: int, config) -> None:
    ours, theirs = f"layers.{i}", f"layers.{i}"
    m.put(f"{ours}.attn_block.norm.weight", f"{theirs}.input_layernorm.weight")
    for role, name in (("w_q", "q_proj"), ("w_k", "k_proj"), ("w_v", "v_proj")):
        _linear(m, f"{ours}.self_attn.{role}", f"{theirs}.self_attn.{name}", config.qkv_bias)
    _linear(m, f"{ours}.self_attn.w_o", f"{theirs}.self_attn.o_proj", config.qkv_bias and config.out_bias)
    m.put(f"{ours}.ffn_block.norm.weight", f"{theirs}.post_attention_layernorm.weight")
    for role, name in (("gate", "gate_proj"), ("linear1", "up_proj"), ("linear2", "down_proj")):
        _linear(m, f"{ours}.ffn.{role}", f"{theirs}.mlp.{name}", config.ffn_bias)


def _linear(m: StateMapper, ours: str, theirs: str, bias: bool) -> None:
    m.put(f"{ours}.weight", f"{theirs}.weight")
    if bias:
        m.put(f"{ours}.bias", f"{theirs}.bias")
