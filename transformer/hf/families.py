"""The family table: one row per supported ``model_type``, naming the function that maps a
folder's config and weights onto our engine. Importers are imported only when their row is used.

A row's importer is either ours (``(hf_config, weights, files) -> Imported``, checked against the
weights' shapes before anything is read) or ``external`` (``(hf_config, weights) ->
LoadedModel``: it builds the model itself; ViT and Marian)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from ..checkpoints.errors import CheckpointError, CodedError
from .folder import CONFIG_FILE


@dataclass(frozen=True)
class Family:
    model_type: str
    title: str
    architectures: str  # what is mapped, shown to the user
    importer: str  # "module:function", imported when used
    external: bool = False


FAMILIES = (
    Family("bert", "BERT", "BertModel, BertForSequenceClassification, BertForMaskedLM", "bert:import_bert"),
    Family(
        "roberta",
        "RoBERTa",
        "RobertaModel, RobertaForSequenceClassification, RobertaForMaskedLM",
        "bert:import_roberta",
    ),
    Family(
        "distilbert",
        "DistilBERT",
        "DistilBertModel, DistilBertForSequenceClassification, DistilBertForMaskedLM",
        "distilbert:import_distilbert",
    ),
    Family(
        "electra",
        "ELECTRA",
        "ElectraModel, ElectraForSequenceClassification, ElectraForMaskedLM",
        "bert:import_electra",
    ),
    Family("gpt2", "GPT-2", "GPT2LMHeadModel", "gpt2:import_gpt2"),
    Family("llama", "Llama", "LlamaForCausalLM (Llama 2/3, TinyLlama, SmolLM)", "llama:import_llama"),
    Family("mistral", "Mistral", "MistralForCausalLM", "llama:import_llama"),
    Family("qwen2", "Qwen2", "Qwen2ForCausalLM", "llama:import_llama"),
    Family("gemma3", "Gemma 3", "Gemma3ForCausalLM (text; GGUF files)", "gemma3:import_gemma3"),
    Family("vit", "ViT", "ViTForImageClassification", "vit:import_vit", external=True),
    Family("marian", "Marian", "MarianMTModel", "marian:import_marian", external=True),
)
BY_TYPE = {f.model_type: f for f in FAMILIES}


def supported() -> str:
    """'BERT (bert), RoBERTa (roberta), ...' for messages."""
    return ", ".join(f"{f.title} ({f.model_type})" for f in FAMILIES)


def family_for(hf_config: dict) -> Family:
    """The row for ``hf_config['model_type']``; CheckpointError naming what is supported otherwise."""
    model_type = hf_config.get("model_type")
    if model_type not in BY_TYPE:
        message = (
            f"{CONFIG_FILE} says model_type {model_type!r}, which this app cannot import. Supported: {supported()}."
        )
        raise CodedError("unsupported", message, model_type=repr(model_type)[:80], supported=supported())
    return BY_TYPE[model_type]


def importer_of(family: Family) -> Callable:
    """The row's function, imported now."""
    module_name, function = family.importer.split(":")
    try:
        module = importlib.import_module(f"{__package__}.{module_name}")
    except ModuleNotFoundError as err:
        raise CheckpointError(
            f"{family.title} folders are listed but their importer ({module_name}.py) is not in this version of the app."
        ) from err
    return getattr(module, function)
