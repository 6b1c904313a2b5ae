"""What the BERT-like families share (BERT, RoBERTa, ELECTRA, DistilBERT): which head a folder has, the
config of a post-norm encoder with learned positions read at its first token, and the mapping of its
embeddings, layers and heads onto ours from a table of where the family keeps each tensor."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.config import ModelConfig
from .folder import CONFIG_FILE
from .mapping import (
    BARE,
    MASKED_LM,
    NO_CLASSES,
    SEQUENCE_CLASSIFICATION,
    CheckpointError,
    Imported,
    StateMapper,
    label_names,
    model_config,
    unused_note,
)


@dataclass(frozen=True)
class EncoderNames:
    """Where a family keeps the tensors of our encoder: names after ``prefix``, ``layer`` with ``{i}`` for
    the layer's number and the layer's own names under it."""

    prefix: str
    layer: str
    attention: tuple[str, str, str, str]  # the query, key, value and output projections
    attention_norm: str
    feed_forward: tuple[str, str]  # the first and second Linear
    output_norm: str
    classifier: tuple[str, str]  # the sequence-classification head's dense and output layers
    mlm: tuple[str, str, str, str]  # the masked-LM head's dense, LayerNorm, decoder and decoder bias


def head_of(hf: dict, weights: dict[str, torch.Tensor]) -> str:
    """Which head to map: from ``architectures`` (e.g. BertForMaskedLM), else from the tensor names."""
    names = hf.get("architectures") or []
    name = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else ""
    if name.endswith("ForSequenceClassification"):
        return SEQUENCE_CLASSIFICATION
    if name.endswith("ForMaskedLM"):
        return MASKED_LM
    if not name and any(k.startswith("classifier.") for k in weights):
        return SEQUENCE_CLASSIFICATION
    return BARE


def encoder_config(hf: dict, head: str, **values) -> ModelConfig:
    """Our config of a BERT-like encoder with ``head``: ``values`` are the family's sizes and settings
    (``d_model`` among them); the rest every such family shares."""
    classes = label_names(hf) if head == SEQUENCE_CLASSIFICATION else NO_CLASSES
    if head == SEQUENCE_CLASSIFICATION and len(classes) < 2:
        raise CheckpointError(f"{CONFIG_FILE}: a single-output (regression) head is not supported; import it bare.")
    return model_config(
        kind="classifier",
        dropout=0.0,
        positional="learned",
        pooling="first",
        head_hidden=(values["d_model"],) if head == SEQUENCE_CLASSIFICATION else (),
        label_names=classes,
        has_head=head == SEQUENCE_CLASSIFICATION,
        embedding_norm=True,
        tokenizer="wordpiece",
        bos_id=None,
        eos_id=None,
        **values,
    )


def import_encoder(
    hf: dict, weights: dict[str, torch.Tensor], files: str, names: EncoderNames, config: ModelConfig, head: str, **mlm
) -> Imported:
    """The encoder of ``config`` and its ``head`` from ``weights`` at ``names``; ``mlm``: how a masked-LM
    head is built (``mlm_activation``, ``mlm_width``; see ``Imported``)."""
    m = StateMapper(weights, files, names.prefix)
    m.put("encoder.embedding.tokens.weight", "embeddings.word_embeddings.weight")
    m.put("encoder.embedding.positions.table.weight", "embeddings.position_embeddings.weight")
    if config.type_vocab_size:
        m.put("encoder.embedding.token_types.weight", "embeddings.token_type_embeddings.weight")
    m.norm("encoder.embedding.norm", "embeddings.LayerNorm")
    if config.embedding_dim:
        m.linear("encoder.embedding.project", "embeddings_project")
    for i in range(config.num_layers):
        _layer(m, names, i)
    extra, notes = {}, []
    if head == SEQUENCE_CLASSIFICATION:  # our head is Sequential(Linear, activation, Linear)
        m.linear("classifier.0", names.classifier[0])
        m.linear("classifier.2", names.classifier[1])
    elif head == MASKED_LM:
        extra = {**mlm, "mlm_tied": _masked_lm(m, names, hf)}
    else:
        notes.append(_bare_note(hf))
    return Imported(config, m.state, m.sources, head, notes=(*notes, *unused_note(m)), **extra)


def _layer(m: StateMapper, names: EncoderNames, i: int) -> None:
    ours, theirs = f"encoder.layers.{i}", names.layer.format(i=i)
    for role, name in zip(("w_q", "w_k", "w_v", "w_o"), names.attention, strict=True):
        m.linear(f"{ours}.self_attn.{role}", f"{theirs}.{name}")
    m.norm(f"{ours}.attn_block.norm", f"{theirs}.{names.attention_norm}")
    m.linear(f"{ours}.ffn.linear1", f"{theirs}.{names.feed_forward[0]}")
    m.linear(f"{ours}.ffn.linear2", f"{theirs}.{names.feed_forward[1]}")
    m.norm(f"{ours}.ffn_block.norm", f"{theirs}.{names.output_norm}")


def _masked_lm(m: StateMapper, names: EncoderNames, hf: dict) -> bool:
    """Maps the masked-LM head; True where its decoder is the token embedding. tie_word_embeddings
    (transformers' default) ties the decoder to the embedding and its bias to the head's, whatever the
    file holds; untied, the decoder keeps its own weight and bias (BERT's and RoBERTa's differ then)."""
    dense, norm, decoder, bias = names.mlm
    m.linear("mlm_head.dense", dense)
    m.norm("mlm_head.norm", norm)
    own = m.has(f"{decoder}.weight") and hf.get("tie_word_embeddings") is False
    if own:
        m.put("mlm_head.decoder.weight", f"{decoder}.weight")
    m.put("mlm_head.decoder.bias", f"{decoder}.bias" if own and m.has(f"{decoder}.bias") else bias)
    return not own


def _bare_note(hf: dict) -> str:
    names = hf.get("architectures") or ["the bare encoder"]
    return (
        f"{names[0]}: the encoder was imported without a head (only sequence classification and masked-LM heads "
        "are mapped); attention and token representations are shown, there are no predictions."
    )
