"""DistilBERT onto our encoder: word + learned position embeddings, LayerNorm, post-norm layers
(q_lin/k_lin/v_lin/out_lin, GELU feed-forward), no segment embedding. Heads:
``DistilBertForSequenceClassification`` (pre_classifier + ReLU + classifier on [CLS]) and
``DistilBertForMaskedLM`` (vocab_transform, activation, vocab_layer_norm, vocab_projector)."""

from __future__ import annotations

import torch

from .bert import head_of
from .mapping import (
    MASKED_LM,
    NO_CLASSES,
    SEQUENCE_CLASSIFICATION,
    CheckpointError,
    Imported,
    StateMapper,
    activation,
    label_names,
    model_config,
    setting,
    token_id,
    unused_note,
)

LAYER_NORM_EPS = 1e-12  # fixed in DistilBERT's code, not in its config


def import_distilbert(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    head = head_of(hf, weights)
    config = _config(hf, head)
    m = StateMapper(weights, files, "distilbert.")
    m.put("encoder.embedding.tokens.weight", "embeddings.word_embeddings.weight")
    m.put("encoder.embedding.positions.table.weight", "embeddings.position_embeddings.weight")
    m.norm("encoder.embedding.norm", "embeddings.LayerNorm")
    for i in range(config.num_layers):
        _layer(m, i)
    notes: list[str] = []
    extra = {}
    if head == SEQUENCE_CLASSIFICATION:
        m.linear("classifier.0", "pre_classifier")
        m.linear("classifier.2", "classifier")
    elif head == MASKED_LM:
        m.linear("mlm_head.dense", "vocab_transform")
        m.norm("mlm_head.norm", "vocab_layer_norm")
        m.put("mlm_head.decoder.bias", "vocab_projector.bias")
        own = m.has("vocab_projector.weight") and hf.get("tie_word_embeddings") is False
        if own:
            m.put("mlm_head.decoder.weight", "vocab_projector.weight")
        extra = {"mlm_activation": config.activation, "mlm_tied": not own}
    else:
        notes.append("The encoder was imported without a head: attention is shown, there are no predictions.")
    notes += unused_note(m)
    return Imported(config, m.state, m.sources, head, notes=tuple(notes), **extra)


def _config(hf: dict, head: str):
    # sinusoidal_pos_embds: the sinusoids are saved in position_embeddings, read like a learned table
    classes = label_names(hf) if head == SEQUENCE_CLASSIFICATION else NO_CLASSES
    if head == SEQUENCE_CLASSIFICATION and len(classes) < 2:
        raise CheckpointError("config.json: a single-output (regression) head is not supported.")
    d_model = setting(hf, "dim")
    return model_config(
        kind="classifier",
        vocab_size=setting(hf, "vocab_size"),
        d_model=d_model,
        num_heads=setting(hf, "n_heads"),
        num_layers=setting(hf, "n_layers"),
        d_ff=setting(hf, "hidden_dim"),
        max_len=setting(hf, "max_position_embeddings"),
        dropout=0.0,
        activation=activation(hf, "activation"),
        positional="learned",
        layer_norm_eps=LAYER_NORM_EPS,
        pad_id=token_id(hf, "pad_token_id", 0),
        pooling="first",
        head_hidden=(d_model,) if head == SEQUENCE_CLASSIFICATION else (),
        head_activation="relu",
        label_names=classes,
        has_head=head == SEQUENCE_CLASSIFICATION,
        embedding_norm=True,
        tokenizer="wordpiece",
        bos_id=None,
        eos_id=None,
    )


def _layer(m: StateMapper, i: int) -> None:
    ours, theirs = f"encoder.layers.{i}", f"transformer.layer.{i}"
    for role, name in (("w_q", "q_lin"), ("w_k", "k_lin"), ("w_v", "v_lin"), ("w_o", "out_lin")):
        m.linear(f"{ours}.self_attn.{role}", f"{theirs}.attention.{name}")
    m.norm(f"{ours}.attn_block.norm", f"{theirs}.sa_layer_norm")
    m.linear(f"{ours}.ffn.linear1", f"{theirs}.ffn.lin1")
    m.linear(f"{ours}.ffn.linear2", f"{theirs}.ffn.lin2")
    m.norm(f"{ours}.ffn_block.norm", f"{theirs}.output_layer_norm")
