"""The Translate page's models: the bundled two (their tasks have gold alignments) and this session's
imported or uploaded encoder-decoders (an imported Marian translator, say).

The page runs the pure functions of ``transformer.translation`` on a model from
``ui.models.load_shared`` (one cached, read-only copy for every session); its results per input go
through the cached service (``ui.compute``): shared for a bundled model, this session's for an upload.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from transformer import LoadedModel
from transformer.hf.spm import readable
from transformer.translation.decode import DecodeOptions, Decoding, decode, teacher_forced

from . import session
from .compute import compute
from .models import Selection, get_model, load_shared

# {bundled folder: task name}; the first is the page's default
TRANSLATION_MODELS = {"en-ko-order": "word-order", "dates": "dates"}
DEFAULT_TRANSLATION_MODEL = "en-ko-order"
ENCODER_DECODER = "encoder-decoder"
MAX_LISTED_TOKENS = 2000  # a larger target vocabulary (Marian: 58,000 pieces) is forced by typing the piece


def imported_translators() -> dict[str, LoadedModel]:
    """This session's imported or uploaded encoder-decoders, by display name (``upload: <name>``)."""
    return {key: m for key, m in session.uploads_of(LoadedModel).items() if m.config.kind == ENCODER_DECODER}


def translation_models() -> list[str]:
    """The bundled models, then this session's encoder-decoders."""
    return list(TRANSLATION_MODELS) + list(imported_translators())


def has_task(name: str) -> bool:
    """Whether ``name`` is a bundled model, whose task knows the gold alignment and example pairs."""
    return name in TRANSLATION_MODELS


def model_for(sidebar_key: str | None) -> tuple[str, bool]:
    """(the model to show, whether it is the sidebar's own choice)."""
    if sidebar_key in TRANSLATION_MODELS or sidebar_key in imported_translators():
        return sidebar_key, True
    return DEFAULT_TRANSLATION_MODEL, False


def load_translation(name: str, device: str) -> LoadedModel:
    """A bundled model (shared) or this session's encoder-decoder ``name``, on ``device``."""
    if has_task(name):
        return load_shared(name, device)
    return get_model(Selection(name, device, 0))


def target_token(loaded: LoadedModel, index: int) -> str:
    """A target id as the page shows it (a SentencePiece word start ``▁`` as ``␣``)."""
    return readable(loaded.target_vocab.id_to_token(index))


def output_text(
    loaded: LoadedModel, ids: list[int], joiner: str = " ", write: Callable[[list[str]], str] | None = None
) -> str:
    """Target ids (the start token left out) as text: Marian's pieces joined by its tokenizer, other
    models' words written by ``write`` (a task's ``written``: Korean particles attached) or joined by
    ``joiner``; special tokens (``</s>``, ``<eos>``, ``<pad>``) left out."""
    ids = [i for i in ids if i not in (loaded.config.eos_id, loaded.config.target_pad_id)]
    decode_ids = getattr(loaded.splitter, "decode", None)
    if decode_ids is not None:
        return decode_ids(ids)
    words = [loaded.target_vocab.id_to_token(i) for i in ids]
    return write(words) if write is not None else joiner.join(words)


def source_tokens(name: str, device: str, text: str) -> tuple[list[str], list[int], list[bool], int]:
    """(tokens, ids, unknown flags, tokens cut off at the model's length) of ``text`` as the model reads it."""

    def read() -> tuple[list[str], list[int], list[bool], int]:
        return _source_tokens(load_translation(name, device), text)

    return compute("translation-source", (device, text), read, model=name)


def run_decoding(name: str, device: str, ids: tuple[int, ...], options: DecodeOptions) -> Decoding:
    """Step-by-step decoding of one source with ``options`` (cached per input and options)."""

    def decoded() -> Decoding:
        return decode(load_translation(name, device), list(ids), options)

    key = (device, ids, _hashable(options))
    return compute("translation-decode", key, decoded, model=name, nbytes=_decoding_nbytes)


def cross_attention(name: str, device: str, ids: tuple[int, ...], target: tuple[int, ...]) -> np.ndarray:
    """(L, H, T_t, T_s) cross-attention of one teacher-forced pass over ``target`` (the start token first)."""

    def crossed() -> np.ndarray:
        return _cross(load_translation(name, device), ids, target)

    return compute("translation-cross", (device, ids, target), crossed, model=name, nbytes=lambda a: a.nbytes)


def _source_tokens(loaded: LoadedModel, text: str) -> tuple[list[str], list[int], list[bool], int]:
    encoded = loaded.text_encoder().encode(text, loaded.config.max_len)
    tokens = [readable(token) for token in encoded.tokens]
    return tokens, encoded.ids, encoded.unknown, encoded.original_length - len(encoded.tokens)


def _cross(loaded: LoadedModel, ids: tuple[int, ...], target: tuple[int, ...]) -> np.ndarray:
    out = teacher_forced(loaded, list(ids), list(target))
    return torch.stack([w[0] for w in out.cross_weights]).float().cpu().numpy()


def _hashable(options: DecodeOptions) -> tuple:
    """The options as a key (their ``forced`` is a dict)."""
    forced = tuple(sorted(options.forced.items()))
    return (options.strategy, options.temperature, options.seed, forced, options.teacher, options.cross_gates,
            options.max_new)  # fmt: skip


def _decoding_nbytes(decoding: Decoding) -> int:
    return sum(s.probs.nbytes + s.self_row.nbytes + s.cross_row.nbytes + 64 * len(s.prefix) for s in decoding.steps)
