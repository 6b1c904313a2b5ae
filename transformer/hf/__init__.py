"""Hugging Face model folders (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2; ViT and Marian by their own
importers) opened in our per-head engine, checked file by file before anything is built.

    loaded = load_hf_folder("path/to/bert-folder")     # a LoadedModel every page can use
    fill_mask(loaded, "The movie was [MASK].")          # top predictions at each blank (masked LMs)
    folder = download("bert-base-uncased")              # huggingface_hub, only the files needed
"""

from .families import FAMILIES, supported
from .fill_mask import fill_mask
from .folder import MAX_WEIGHTS_MB, is_hf_folder
from .hub import download
from .importer import load_hf_folder
from .loaded import ImportedModel

__all__ = [
    "FAMILIES",
    "MAX_WEIGHTS_MB",
    "ImportedModel",
    "download",
    "fill_mask",
    "is_hf_folder",
    "load_hf_folder",
    "supported",
]
