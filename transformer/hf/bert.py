"""BERT, RoBERTa and ELECTRA (one layout, three prefixes) onto our encoder.

Embeddings: word + learned position (RoBERTa's start at row padding_idx + 1) + segment type 0,
LayerNorm (ELECTRA: at its embedding size, then a projection to the hidden size). Layers: post-norm,
query/key/value/output projections, GELU feed-forward. Heads: ``*ForSequenceClassification`` (BERT:
pooler dense + tanh on [CLS], then the classifier; RoBERTa: dense + tanh + out_proj on <s>;
ELECTRA: the same with GELU) and ``*ForMaskedLM``; any other architecture is imported bare.
"""

from __future__ import annotations

import torch

from .encoder import EncoderNames, encoder_config, head_of, import_encoder
from .folder import CONFIG_FILE
from .mapping import CheckpointError, Imported, activation, setting, token_id

PREFIX = {"bert": "bert.", "roberta": "roberta.", "electra": "electra."}
# the masked-LM head's names: (dense, LayerNorm, decoder, bias)
MLM_NAMES = {
    "bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder"),
    "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder"),
    "electra": ("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head"),
}
MLM_BIAS = {"bert": "cls.predictions.bias", "roberta": "lm_head.bias", "electra": "generator_lm_head.bias"}
# the sequence-classification head: BERT's pooler then classifier, the others' two-layer classifier
CLASSIFIER = {"bert": ("pooler.dense", "classifier")}
HEAD_ACTIVATION = {"bert": "tanh", "roberta": "tanh", "electra": "gelu"}


def names(family: str) -> EncoderNames:
    """Where a BERT, RoBERTa or ELECTRA folder keeps each tensor."""
    return EncoderNames(
        prefix=PREFIX[family],
        layer="encoder.layer.{i}",
        attention=("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"),
        attention_norm="attention.output.LayerNorm",
        feed_forward=("intermediate.dense", "output.dense"),
        output_norm="output.LayerNorm",
        classifier=CLASSIFIER.get(family, ("classifier.dense", "classifier.out_proj")),
        mlm=(*MLM_NAMES[family], MLM_BIAS[family]),
    )


def import_bert(hf: dict, weights: dict[str, torch.Tensor], files: str, family: str = "bert") -> Imported:
    """The encoder (and its head, where it has a supported one) of a BERT, RoBERTa or ELECTRA folder."""
    head = head_of(hf, weights)
    config = _config(hf, family, head)
    act = "gelu" if family != "bert" else activation(hf, "hidden_act")
    width = config.embedding_dim if family == "electra" else config.d_model
    return import_encoder(hf, weights, files, names(family), config, head, mlm_activation=act, mlm_width=width)


def _config(hf: dict, family: str, head: str):
    d_model = setting(hf, "hidden_size")
    pad_id = token_id(hf, "pad_token_id", 1 if family == "roberta" else 0)
    offset = pad_id + 1 if family == "roberta" else 0
    positions = setting(hf, "max_position_embeddings")
    if positions <= offset:
        raise CheckpointError(f"{CONFIG_FILE}: max_position_embeddings ({positions}) leaves no room for any token.")
    kind = hf.get("position_embedding_type", "absolute")
    if kind not in (None, "absolute"):
        raise CheckpointError(f"{CONFIG_FILE}: position_embedding_type {kind!r} is not supported (only 'absolute').")
    embedding = setting(hf, "embedding_size", d_model) if family == "electra" else d_model
    return encoder_config(
        hf,
        head,
        vocab_size=setting(hf, "vocab_size"),
        d_model=d_model,
        num_heads=setting(hf, "num_attention_heads"),
        num_layers=setting(hf, "num_hidden_layers"),
        d_ff=setting(hf, "intermediate_size"),
        max_len=positions - offset,
        activation=activation(hf, "hidden_act"),
        layer_norm_eps=setting(hf, "layer_norm_eps", 1e-12, float),
        pad_id=pad_id,
        head_activation=HEAD_ACTIVATION[family],
        embedding_dim=embedding if embedding != d_model else 0,
        type_vocab_size=setting(hf, "type_vocab_size", 2),
        position_offset=offset,
    )


def import_roberta(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    return import_bert(hf, weights, files, "roberta")


def import_electra(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    return import_bert(hf, weights, files, "electra")
