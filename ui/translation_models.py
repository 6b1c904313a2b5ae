"""The bundled translation models: which one the Translate page shows, loaded once and shared.

The page runs the pure functions of ``transformer.translation`` on a model from
``ui.models.load_shared`` (one cached, read-only copy for every session) and keeps small
results per input in ``st.cache_data``.
"""

from __future__ import annotations

import streamlit as st
import torch

from transformer import LoadedModel
from transformer.translation.decode import DecodeOptions, Decoding, decode, teacher_forced

from .models import load_shared

# {bundled folder: task name}; the first is the page's default
TRANSLATION_MODELS = {"en-ko-order": "word-order", "dates": "dates"}
DEFAULT_TRANSLATION_MODEL = "en-ko-order"


def model_for(sidebar_key: str | None) -> tuple[str, bool]:
    """(the model to show, whether it is the sidebar's own choice)."""
    if sidebar_key in TRANSLATION_MODELS:
        return sidebar_key, True
    return DEFAULT_TRANSLATION_MODEL, False


def load_translation(name: str, device: str) -> LoadedModel:
    return load_shared(name, device)


@st.cache_data(show_spinner=False, max_entries=256, ttl=3600)
def source_tokens(name: str, device: str, text: str) -> tuple[list[str], list[int], list[bool], int]:
    """(tokens, ids, unknown flags, tokens cut off at the model's length) of ``text`` as the model reads it."""
    loaded = load_translation(name, device)
    encoded = loaded.text_encoder().encode(text, loaded.config.max_len)
    return encoded.tokens, encoded.ids, encoded.unknown, encoded.original_length - len(encoded.tokens)


@st.cache_data(show_spinner=False, max_entries=256, ttl=3600)
def run_decoding(name: str, device: str, ids: tuple[int, ...], options: DecodeOptions) -> Decoding:
    """Step-by-step decoding of one source with ``options`` (cached per input and options)."""
    return decode(load_translation(name, device), list(ids), options)


@st.cache_data(show_spinner=False, max_entries=256, ttl=3600)
def cross_attention(name: str, device: str, ids: tuple[int, ...], target: tuple[int, ...]):
    """(L, H, T_t, T_s) cross-attention of one teacher-forced pass over ``target`` (``<bos>`` first)."""
    out = teacher_forced(load_translation(name, device), list(ids), list(target))
    return torch.stack([w[0] for w in out.cross_weights]).float().cpu().numpy()
