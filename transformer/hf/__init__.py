"""Hugging Face model folders (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2; ViT and Marian by their own
importers) opened in our per-head engine, checked file by file before anything is built.

    loaded = load_hf_folder("path/to/bert-folder")     # a LoadedModel every page can use
    folder = download("bert-base-uncased")              # huggingface_hub, only the files needed

Filling in blanks with a masked language model is analysis: ``transformer.analysis.fill_mask``.
"""

from .families import FAMILIES, supported
from .folder import MAX_WEIGHTS_MB, is_hf_folder
from .hub import download
from .importer import load_hf_folder
from .loaded import ImportedModel

__all__ = [
    "FAMILIES",
    "MAX_WEIGHTS_MB",
    "ImportedModel",
    "download",
    "is_hf_folder",
    "load_hf_folder",
    "supported",
]
