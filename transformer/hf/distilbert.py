"""DistilBERT onto our encoder: word + learned position embeddings, LayerNorm, post-norm layers
(q_lin/k_lin/v_lin/out_lin, GELU feed-forward), no segment embedding. Heads:
``DistilBertForSequenceClassification`` (pre_classifier + ReLU + classifier on [CLS]) and
``DistilBertForMaskedLM`` (vocab_transform, activation, vocab_layer_norm, vocab_projector)."""

from __future__ import annotations

import torch

from .encoder import EncoderNames, encoder_config, head_of, import_encoder
from .mapping import Imported, activation, setting, token_id

LAYER_NORM_EPS = 1e-12  # fixed in DistilBERT's code, not in its config
NAMES = EncoderNames(
    prefix="distilbert.",
    layer="transformer.layer.{i}",
    attention=("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin"),
    attention_norm="sa_layer_norm",
    feed_forward=("ffn.lin1", "ffn.lin2"),
    output_norm="output_layer_norm",
    classifier=("pre_classifier", "classifier"),
    mlm=("vocab_transform", "vocab_layer_norm", "vocab_projector", "vocab_projector.bias"),
)


def import_distilbert(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    head = head_of(hf, weights)
    # sinusoidal_pos_embds: the sinusoids are saved in position_embeddings, read like a learned table
    config = encoder_config(
        hf,
        head,
        vocab_size=setting(hf, "vocab_size"),
        d_model=setting(hf, "dim"),
        num_heads=setting(hf, "n_heads"),
        num_layers=setting(hf, "n_layers"),
        d_ff=setting(hf, "hidden_dim"),
        max_len=setting(hf, "max_position_embeddings"),
        activation=activation(hf, "activation"),
        layer_norm_eps=LAYER_NORM_EPS,
        pad_id=token_id(hf, "pad_token_id", 0),
        head_activation="relu",
    )
    return import_encoder(hf, weights, files, NAMES, config, head, mlm_activation=config.activation)
