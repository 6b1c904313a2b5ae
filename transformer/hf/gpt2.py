"""GPT-2 (``GPT2LMHeadModel``) onto our decoder-only language model: token + learned position
embeddings, pre-norm layers (ln_1, fused c_attn, c_proj, ln_2, c_fc, gelu_new, c_proj), final ln_f,
output tied to the token embedding. GPT-2's Conv1D layers store (in, out): transposed here; c_attn's
output columns are [q | k | v], split into our three projections."""

from __future__ import annotations

import torch

from ..core.decoder import KIND as LANGUAGE_MODEL_KIND
from .folder import CONFIG_FILE
from .mapping import (
    LANGUAGE_MODEL,
    CheckpointError,
    Imported,
    StateMapper,
    activation,
    model_config,
    setting,
    token_id,
    unused_note,
)

UNSUPPORTED_FLAGS = ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention")


def import_gpt2(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    config = _config(hf)
    m = StateMapper(weights, files, "transformer.")
    m.put("embedding.tokens.weight", "wte.weight")
    m.put("embedding.positions.table.weight", "wpe.weight")
    for i in range(config.num_layers):
        _layer(m, i, config.d_model)
    m.norm("final_norm", "ln_f")
    if hf.get("tie_word_embeddings") is False:
        raise CheckpointError(f"{CONFIG_FILE}: tie_word_embeddings false (an untied output layer) is not supported.")
    return Imported(config, m.state, m.sources, LANGUAGE_MODEL, notes=tuple(unused_note(m)))


def _config(hf: dict):
    for flag in UNSUPPORTED_FLAGS:
        if hf.get(flag):
            raise CheckpointError(f"{CONFIG_FILE}: {flag} is set; this app imports GPT-2 without it.")
    if hf.get("scale_attn_weights") is False:
        raise CheckpointError(f"{CONFIG_FILE}: scale_attn_weights false (no 1/sqrt(d) scale) is not supported.")
    d_model = setting(hf, "n_embd")
    vocab = setting(hf, "vocab_size")
    eos = token_id(hf, "eos_token_id", 0)
    eos = eos if eos < vocab else 0  # a config's id outside the table (a tiny test model's 50256) pads nothing
    return model_config(
        kind=LANGUAGE_MODEL_KIND,
        vocab_size=vocab,
        d_model=d_model,
        num_heads=setting(hf, "n_head"),
        num_layers=setting(hf, "n_layer"),
        d_ff=hf.get("n_inner") or 4 * d_model,
        max_len=setting(hf, "n_positions"),
        dropout=0.0,
        activation=activation(hf, "activation_function", "gelu_new"),
        positional="learned",
        norm_first=True,
        final_norm=True,
        tie_output_embedding=True,
        layer_norm_eps=setting(hf, "layer_norm_epsilon", 1e-5, float),
        pad_id=eos,
        bos_id=eos,
        eos_id=eos,
        label_names=("next-token", "none"),
        tokenizer="byte_bpe",
    )


def _layer(m: StateMapper, i: int, d_model: int) -> None:
    ours, theirs = f"layers.{i}", f"h.{i}"
    m.norm(f"{ours}.attn_block.norm", f"{theirs}.ln_1")
    for k, role in enumerate(("w_q", "w_k", "w_v")):
        cols = slice(k * d_model, (k + 1) * d_model)
        m.put(f"{ours}.self_attn.{role}.weight", f"{theirs}.attn.c_attn.weight", lambda w, c=cols: w[:, c].t())
        m.put(f"{ours}.self_attn.{role}.bias", f"{theirs}.attn.c_attn.bias", lambda b, c=cols: b[c])
    m.linear(f"{ours}.self_attn.w_o", f"{theirs}.attn.c_proj", transposed=True)
    m.norm(f"{ours}.ffn_block.norm", f"{theirs}.ln_2")
    m.linear(f"{ours}.ffn.linear1", f"{theirs}.mlp.c_fc", transposed=True)
    m.linear(f"{ours}.ffn.linear2", f"{theirs}.mlp.c_proj", transposed=True)
