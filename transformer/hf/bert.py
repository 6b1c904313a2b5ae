"""BERT, RoBERTa and ELECTRA (one layout, three prefixes) onto our encoder.

Embeddings: word + learned position (RoBERTa's start at row padding_idx + 1) + segment type 0,
LayerNorm (ELECTRA: at its embedding size, then a projection to the hidden size). Layers: post-norm,
query/key/value/output projections, GELU feed-forward. Heads: ``*ForSequenceClassification`` (BERT:
pooler dense + tanh on [CLS], then the classifier; RoBERTa: dense + tanh + out_proj on <s>;
ELECTRA: the same with GELU) and ``*ForMaskedLM``; any other architecture is imported bare.
"""

from __future__ import annotations

import torch

from .folder import CONFIG_FILE
from .mapping import (
    BARE,
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

PREFIX = {"bert": "bert.", "roberta": "roberta.", "electra": "electra."}
# the masked-LM head's names: (dense, LayerNorm, decoder, bias)
MLM_NAMES = {
    "bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder"),
    "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder"),
    "electra": ("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head"),
}
MLM_BIAS = {"bert": "cls.predictions.bias", "roberta": "lm_head.bias", "electra": "generator_lm_head.bias"}
HEAD_ACTIVATION = {"bert": "tanh", "roberta": "tanh", "electra": "gelu"}


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


def import_bert(hf: dict, weights: dict[str, torch.Tensor], files: str, family: str = "bert") -> Imported:
    """The encoder (and its head, where it has a supported one) of a BERT, RoBERTa or ELECTRA folder."""
    head = head_of(hf, weights)
    config = _config(hf, family, head)
    m = StateMapper(weights, files, PREFIX[family])
    _embeddings(m, config)
    for i in range(config.num_layers):
        _layer(m, i)
    notes: list[str] = []
    if head == SEQUENCE_CLASSIFICATION:
        _classifier(m, family)
    elif head == MASKED_LM:
        _masked_lm(m, family, config)
    else:
        notes.append(_bare_note(hf))
    extra = {}
    if head == MASKED_LM:
        act = "gelu" if family != "bert" else activation(hf, "hidden_act")
        width = config.embedding_dim if family == "electra" else config.d_model
        extra = {"mlm_activation": act, "mlm_width": width, "mlm_tied": "mlm_head.decoder.weight" not in m.state}
    notes += unused_note(m)
    return Imported(config, m.state, m.sources, head, notes=tuple(notes), **extra)


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
    classes = label_names(hf) if head == SEQUENCE_CLASSIFICATION else NO_CLASSES
    if head == SEQUENCE_CLASSIFICATION and len(classes) < 2:
        raise CheckpointError(f"{CONFIG_FILE}: a single-output (regression) head is not supported; import it bare.")
    return model_config(
        kind="classifier",
        vocab_size=setting(hf, "vocab_size"),
        d_model=d_model,
        num_heads=setting(hf, "num_attention_heads"),
        num_layers=setting(hf, "num_hidden_layers"),
        d_ff=setting(hf, "intermediate_size"),
        max_len=positions - offset,
        dropout=0.0,
        activation=activation(hf, "hidden_act"),
        positional="learned",
        layer_norm_eps=setting(hf, "layer_norm_eps", 1e-12, float),
        pad_id=pad_id,
        pooling="first",
        head_hidden=(d_model,) if head == SEQUENCE_CLASSIFICATION else (),
        head_activation=HEAD_ACTIVATION[family],
        label_names=classes,
        has_head=head == SEQUENCE_CLASSIFICATION,
        embedding_dim=embedding if embedding != d_model else 0,
        type_vocab_size=setting(hf, "type_vocab_size", 2),
        embedding_norm=True,
        position_offset=offset,
        tokenizer="wordpiece",
        bos_id=None,
        eos_id=None,
    )


def _embeddings(m: StateMapper, config) -> None:
    m.put("encoder.embedding.tokens.weight", "embeddings.word_embeddings.weight")
    m.put("encoder.embedding.positions.table.weight", "embeddings.position_embeddings.weight")
    m.put("encoder.embedding.token_types.weight", "embeddings.token_type_embeddings.weight")
    m.norm("encoder.embedding.norm", "embeddings.LayerNorm")
    if config.embedding_dim:
        m.linear("encoder.embedding.project", "embeddings_project")


def _layer(m: StateMapper, i: int) -> None:
    ours, theirs = f"encoder.layers.{i}", f"encoder.layer.{i}"
    for role, name in (("w_q", "query"), ("w_k", "key"), ("w_v", "value")):
        m.linear(f"{ours}.self_attn.{role}", f"{theirs}.attention.self.{name}")
    m.linear(f"{ours}.self_attn.w_o", f"{theirs}.attention.output.dense")
    m.norm(f"{ours}.attn_block.norm", f"{theirs}.attention.output.LayerNorm")
    m.linear(f"{ours}.ffn.linear1", f"{theirs}.intermediate.dense")
    m.linear(f"{ours}.ffn.linear2", f"{theirs}.output.dense")
    m.norm(f"{ours}.ffn_block.norm", f"{theirs}.output.LayerNorm")


def _classifier(m: StateMapper, family: str) -> None:
    """Our head is Sequential(Linear, activation, Linear): classifier.0 and classifier.2."""
    if family == "bert":
        m.linear("classifier.0", "pooler.dense")
        m.linear("classifier.2", "classifier")
    else:
        m.linear("classifier.0", "classifier.dense")
        m.linear("classifier.2", "classifier.out_proj")


def _masked_lm(m: StateMapper, family: str, config) -> None:
    dense, norm, decoder = MLM_NAMES[family]
    m.linear("mlm_head.dense", dense)
    m.norm("mlm_head.norm", norm)
    if m.has(f"{decoder}.weight") and not _same(m, f"{decoder}.weight", "embeddings.word_embeddings.weight"):
        m.put("mlm_head.decoder.weight", f"{decoder}.weight")  # tie_word_embeddings false: its own table
    m.put("mlm_head.decoder.bias", MLM_BIAS[family])


def _same(m: StateMapper, a: str, b: str) -> bool:
    x, y = m.take(a), m.take(b)
    return x.shape == y.shape and (x.is_meta or bool(torch.equal(x, y)))


def _bare_note(hf: dict) -> str:
    names = hf.get("architectures") or ["the bare encoder"]
    return (
        f"{names[0]}: the encoder was imported without a head (only sequence classification and masked-LM heads "
        "are mapped); attention and token representations are shown, there are no predictions."
    )


def import_roberta(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    return import_bert(hf, weights, files, "roberta")


def import_electra(hf: dict, weights: dict[str, torch.Tensor], files: str) -> Imported:
    return import_bert(hf, weights, files, "electra")
