"""The Attention page on a decoder-only language model (SmolLM2, review-lm, an imported or GGUF model).

What differs from an encoder: the input is read as Generate and the CLI read it (the start token a model
trained here reads first; an imported model's own tokenizer), tokens are shown as they read
(``ui.readable_tokens``), the look-ahead mask blocks every later key, and the text can be repeated
(the sentence's tokens twice, or the head atlas's random-token probe) so that an induction head's
stripe appears. A request is bounded by construction: at most :func:`token_cap` tokens, so that the
weights (layers × heads × T² float32) stay within ``LM_WEIGHTS_BYTES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import streamlit as st

from transformer import AnalysisResult, LoadedModel
from transformer.analysis.analyze import analyze_encoded
from transformer.analysis.head_roles import induction_score
from transformer.analysis.lm_inputs import ids_inputs, is_language_model, text_ids
from transformer.core.masks import layer_look_ahead_mask
from transformer.lm.induction import PROBE_PERIOD, probe_range, repeated_random_tokens

from . import compute, models
from .compute import MB
from .i18n import t
from .models import Selection, checked_size, get_model, result_nbytes
from .readable_tokens import model_piece, tokens_shown

LM_WEIGHTS_BYTES = 100 * MB  # one request's weights, queries and keys at most (SmolLM2, 30 × 9 heads: 246 tokens)
MAX_LM_TOKENS = 512  # and never more tokens than this (a model with few heads)
REPEATS = ("off", "twice", "random")  # the text as typed, its tokens twice, random tokens twice


def is_decoder(loaded: LoadedModel) -> bool:
    return is_language_model(loaded)


SCRATCH = 2  # an analysis at the cap needs about this many times its weights (measured: 159 MB for 99 MB)


def lm_bytes(config, tokens: int) -> int:
    """Bytes of a language model's analysis of ``tokens`` tokens: weights (L × H × T² float32) and
    queries and keys (2 × L × T × D float32)."""
    return 4 * (config.num_layers * config.num_heads * tokens**2 + 2 * config.num_layers * tokens * config.d_model)


def token_cap(config) -> int:
    """The most tokens the Attention page runs through a language model: the largest T whose weights
    (L × H × T² float32) and queries and keys (2 × L × T × D float32) fit ``LM_WEIGHTS_BYTES``, at
    most ``MAX_LM_TOKENS`` and the model's context."""
    heads, width = config.num_layers * config.num_heads, 2 * config.num_layers * config.d_model
    t = int((-width + (width * width + 4 * heads * LM_WEIGHTS_BYTES / 4) ** 0.5) / (2 * heads)) if heads else 1
    return max(1, min(t, MAX_LM_TOKENS, config.max_len))


@dataclass(frozen=True)
class Repeat:
    """What a repeat mode ran: ids (start token included), a text for the record, and where the two
    copies are: ``period`` tokens from position ``start``, then the same again (period 0: no repeat)."""

    ids: tuple[int, ...]
    text: str
    period: int
    start: int


def start_count(loaded: LoadedModel, ids: list[int]) -> int:
    """1 when the prompt begins with a special (start) token the model reads first, else 0."""
    return int(bool(ids) and model_piece(loaded, ids[0])[2])


def repeated(loaded: LoadedModel, text: str, mode: str, limit: int) -> Repeat:
    """``mode`` 'twice': the text's tokens written twice after the start token (each copy cut so both
    fit ``limit``); 'random': the head atlas's first probe sequence (its start token, then random ids
    twice; ``transformer.lm.induction``), as long as ``limit`` allows."""
    tok = loaded.lm_tokenizer
    if mode == "random":
        cfg = loaded.config
        first, end = probe_range(loaded.metrics, cfg.vocab_size)
        period = min(PROBE_PERIOD, (limit - 1) // 2)
        start_id = cfg.bos_id if cfg.bos_id is not None else first
        ids = repeated_random_tokens(1, period, end, first, start_id)[0].tolist()
        return Repeat(tuple(ids), tok.decode(ids[1:]), period, 1)
    ids = text_ids(loaded, text)
    start = start_count(loaded, ids)
    body = ids[start:][: (limit - start) // 2]
    return Repeat(tuple(ids[:start] + body * 2), f"{text} {text}", len(body), start)


def analysis_later(selection: Selection, text: str, mode: str) -> tuple[Callable[[], AnalysisResult], Repeat | None]:
    """A function giving the analysis the page shows (from any thread: a download runs it on click), and
    the repeat it runs (None for the text as typed). A language model runs at most :func:`token_cap`
    tokens; an encoder reads the text as typed (``mode`` is for language models only)."""
    loaded = get_model(selection)
    if not is_decoder(loaded):
        return models.analysis_later(selection, [text]), None
    limit = min(selection.max_len, token_cap(loaded.config))
    expected = SCRATCH * lm_bytes(loaded.config, limit)  # for the server's budget of heavy requests
    if mode not in REPEATS[1:]:
        return models.analysis_later(replace(selection, max_len=limit), [text], expected), None
    rep = repeated(loaded, text, mode, limit)
    key = (selection.device, "repeat", rep.ids, limit)
    analyse = partial(_ids_analysed, loaded, rep, limit)
    later = compute.later(
        "analysis", key, analyse, model=selection.model_key, nbytes=result_nbytes, slot_bytes=expected
    )
    return later, rep


def _ids_analysed(loaded: LoadedModel, rep: Repeat, limit: int) -> AnalysisResult:
    inputs = ids_inputs(loaded, list(rep.ids), rep.text, limit)
    checked_size(loaded, inputs)
    return analyze_encoded(loaded, inputs)


def readable_tokens(loaded: LoadedModel, result: AnalysisResult, index: int = 0) -> list[str]:
    """Input ``index``'s tokens as they read: ␣ a space, a byte piece as the character it makes, ⟨…⟩
    a special token (the start token)."""
    n = int(result.lengths[index])
    return tokens_shown(loaded, [int(i) for i in result.ids[index, :n]])


def blocked_cells(config, layer: int, n: int, view: str) -> np.ndarray:
    """(n, n) bool, True where the look-ahead mask blocks the query from the key: the layer's own mask
    (a local layer's window too) for one head or the heads' mean; the plain causal mask for rollout."""
    mask = layer_look_ahead_mask(config, -1 if view == "rollout" else layer, n)
    return ~mask.numpy()


def induction_here(attn: np.ndarray, rep: Repeat | None) -> np.ndarray | None:
    """(L, H) induction score of every head on this repeated input (None without a repeat of at least
    two tokens): each second-copy token's weight on the token after its first occurrence."""
    if rep is None or rep.period < 2 or rep.start + 2 * rep.period > attn.shape[-1]:
        return None
    return induction_score(attn, rep.period, rep.start)


def atlas_induction(name: str, device: str) -> np.ndarray:
    """(L, H) the head atlas's induction scores (its repeated random-token probe), cached for everyone."""
    from .atlas import lm_induction  # the atlas's module loads the vision and translation models' helpers

    return lm_induction(name, device)


def repeat_control() -> str:
    """As typed / the sentence twice / random tokens twice (kept in the URL); returns the mode."""
    names = {
        "off": t("attention.repeat_off"),
        "twice": t("attention.repeat_twice"),
        "random": t("attention.repeat_random"),
    }
    mode = st.segmented_control(
        t("attention.repeat"),
        list(REPEATS),
        default="off",
        key="repeat",
        bind="query-params",
        format_func=names.get,
        help=t("attention.repeat_help"),
    )
    return mode or "off"


STRONGEST = 3  # heads named as this input's strongest induction heads


def induction_note(selection: Selection, attn: np.ndarray, rep: Repeat | None, layer: int, head: int) -> str:
    """The head on screen's induction score on the head atlas's probe and on this repeated input, and
    this input's strongest induction heads ('' without a repeat)."""
    here = induction_here(attn, rep)
    if here is None:
        return ""
    probe = atlas_induction(selection.model_key, selection.device)
    order = np.argsort(-here, axis=None, kind="stable")[:STRONGEST]
    best = ", ".join(f"L{i // here.shape[1] + 1} H{i % here.shape[1] + 1} ({here.flat[i]:.2f})" for i in order)
    return t(
        "attention.induction_note",
        layer=layer + 1,
        head=head + 1,
        atlas=f"{probe[layer, head]:.2f}",
        here=f"{here[layer, head]:.2f}",
        best=best,
    )


def decoder_captions(loaded: LoadedModel, result: AnalysisResult, view: str) -> list[str]:
    """What a causal heatmap needs said: grey cells are masked; the start token (or that the tokenizer
    adds none); for rollout, what it means in a causal model."""
    ids = [int(i) for i in result.ids[0, : int(result.lengths[0])]]
    if start_count(loaded, ids):
        start = t("attention.start_token", token=readable_tokens(loaded, result)[0])
    else:
        start = t("attention.no_start_token")
    return [t("attention.masked_caption"), start] + ([t("attention.rollout_causal")] if view == "rollout" else [])
