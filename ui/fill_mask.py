"""The Fill-in-the-blank page's models, blanks and runs (no widgets here).

The masked language models trained here are bundled (one per language, shared by every session); an
imported ``*ForMaskedLM`` folder lives in this session's upload registry like any upload. Text is checked before it is run: one clear
message for no blank, too many blanks, or a text longer than the model reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from transformer import LoadedModel
from transformer.analysis.decoder_fill import MAX_PIECES, POOL, DecoderFill, fill_blank_decoder
from transformer.analysis.fill_mask import FillResult, fill_mask

from . import session
from .compute import compute
from .i18n import t

MAX_BLANKS = 5  # blanks one sentence may hold (each gets its own figures)
MAX_CHARS = 2000  # characters of text one run reads
MAX_WORD_BUTTONS = 40  # words offered to click into a blank
TOP_K = 5
MAX_DECODER_TOKENS = 64  # tokens of a sentence the decoder fills (a sentence, not a page)
FOCUS_MIN, FOCUS_TIMES_EQUAL = 0.2, 2.0  # see focus_floor
BLANK_SPELLINGS = ("[MASK]", "<mask>")  # BERT's and RoBERTa's: either is read as the model's own
CORE = re.compile(r"\w+(?:['’]\w+)*")  # a word without the punctuation around it


@dataclass(frozen=True)
class Problem:
    """Why a text cannot be run: a catalogue key and its fields."""

    key: str
    fields: dict


BUNDLED = {"en": "imdb-sst2-mlm", "ko": "nsmc-mlm"}  # the masked language model trained here for each language
KIND = "masked-lm"
DECODER = "smollm2-135m-instruct"  # the real English decoder (ui.language_models.PRETRAINED_LM)
DECODER_FIRST = ("en",)  # the languages whose page opens on the decoder (it reads English only)
# SmolLM2 reads English only: its examples are English in both interface languages. The first gives the clue
# before the blank; the lesson asks to try the other order, where the clue comes too late to propose the word.
DECODER_EXAMPLE = "I loved every minute of it: the movie was [MASK]."
OTHER_ORDER = "The movie was [MASK], I loved it."


def bundled_masked_models(lang: str) -> list[str]:
    """Names of the bundled masked language models, the one for ``lang`` first."""
    from .models import MODELS_DIR, bundle_kind

    folders = sorted(MODELS_DIR.iterdir()) if MODELS_DIR.is_dir() else []
    names = [p.name for p in folders if bundle_kind(p) == KIND]
    return sorted(names, key=lambda name: name != BUNDLED.get(lang))


def masked_models(lang: str = "en") -> dict[str, LoadedModel]:
    """The masked language models this session can use, by display name: this session's imported ones (a
    student who imported one came to use it), the server's own folders (``$ATTENTION_LAB_MODELS``: whoever
    runs the server named them), then the bundled ones (the one for ``lang`` first); server and bundled
    models are shared by every session."""
    from .models import load_shared, server_models

    bundled = {name: load_shared(name, "cpu") for name in bundled_masked_models(lang)}
    served = {name: load_shared(name, "cpu") for name in server_models()}
    served = {name: m for name, m in served.items() if m.is_masked_lm}
    imported = {key: m for key, m in session.uploads_of(LoadedModel).items() if m.is_masked_lm}
    return imported | served | bundled


def page_models(lang: str = "en") -> tuple[list[str], dict[str, LoadedModel]]:
    """(every model the page offers, in order; the masked ones, loaded): this session's imports, the
    server's, then in English the bundled decoder before the bundled masked models (in Korean after
    them: the decoder reads English only). The decoder is loaded only when it is chosen."""
    from .language_models import bundled_language_models

    masked = masked_models(lang)
    names = list(masked)
    if DECODER in bundled_language_models():
        bundled = [n for n in names if n in bundled_masked_models(lang)]
        at = names.index(bundled[0]) if bundled and lang in DECODER_FIRST else len(names)
        names.insert(at, DECODER)
    return names, masked


def load_decoder() -> LoadedModel:
    """SmolLM2, the copy the Generate page uses (one per process, ``ui.models.load_shared``)."""
    from .language_models import load_lm

    return load_lm(DECODER, "cpu")


def decoder_problem(loaded: LoadedModel, text: str) -> Problem | None:
    """What keeps ``text`` from the decoder (None when nothing does): it fills one blank at a time, in a
    text of at most MAX_DECODER_TOKENS tokens (every candidate carries the whole sentence's keys and values)."""
    wrong = blank_problem(text, BLANK_SPELLINGS[0], 1)
    if wrong is not None:
        return wrong
    tokens = decoder_tokens(loaded, text)
    if tokens > MAX_DECODER_TOKENS:
        return Problem("fill_mask.too_long_tokens", {"tokens": tokens, "limit": MAX_DECODER_TOKENS})
    return None


def decoder_tokens(loaded: LoadedModel, text: str) -> int:
    """Tokens of ``text`` around its blank, with the longest word a candidate may have in the blank."""
    return len(loaded.lm_tokenizer.encode(text.replace(BLANK_SPELLINGS[0], " ")).ids) + MAX_PIECES


def decoder_scratch(loaded: LoadedModel, tokens: int) -> int:
    """Bytes one decoder run holds at most: every candidate's copy of the keys and values (doubled as a
    cache grows), its activations, and two rows of logits per candidate."""
    c = loaded.config
    kv = 2 * c.num_layers * c.kv_heads * c.head_dim
    return 4 * POOL * (tokens * (2 * kv + 4 * c.d_ff) + 2 * c.vocab_size)


def run_decoder_fill(loaded: LoadedModel, text: str, top_k: int = TOP_K) -> DecoderFill:
    """:func:`transformer.analysis.decoder_fill.fill_blank_decoder` through the cached service: one run per
    sentence and number of candidates for every session (the model is bundled)."""
    scratch = decoder_scratch(loaded, decoder_tokens(loaded, text))
    return compute("fill-decoder", (text, top_k), lambda: fill_blank_decoder(loaded, text, top_k),
                   model=DECODER, slot_bytes=scratch)  # fmt: skip


def family(loaded: LoadedModel) -> str:
    """What the model is, for the page's one line about it: the imported family ("BERT"), or that it was
    trained here."""
    return getattr(loaded, "family", "") or t("fill_mask.trained_here")


def unknown_flags(loaded: LoadedModel, ids: list[int]) -> list[bool]:
    """True where an id is the model's unknown token."""
    encoder = loaded.text_encoder()
    unk = encoder.info.unk_id if hasattr(encoder, "info") else loaded.vocab.unk_id
    return [i == unk for i in ids]


def filled_text(loaded: LoadedModel, ids: list[int]) -> str:
    """``ids`` as text, special tokens left out (the sentence with its blanks filled)."""
    return loaded.text_encoder().decode(ids)


def mask_token(loaded: LoadedModel) -> str:
    """The blank as this model's tokenizer writes it ("[MASK]", "<mask>")."""
    encoder = loaded.text_encoder()
    return loaded.vocab.id_to_token(encoder.mask_id) if encoder.mask_id is not None else BLANK_SPELLINGS[0]


def with_models_blank(text: str, token: str) -> str:
    """``text`` with every spelling of a blank written as ``token`` (so "[MASK]" works for RoBERTa too)."""
    for spelling in BLANK_SPELLINGS:
        if spelling != token:
            text = re.sub(re.escape(spelling), token, text, flags=re.IGNORECASE)
    return text


def blank_count(text: str, token: str) -> int:
    return text.count(token)


def words(text: str) -> list[str]:
    """The whitespace-separated words of ``text`` (the first MAX_WORD_BUTTONS)."""
    return text.split()[:MAX_WORD_BUTTONS]


def blank_word(text: str, index: int, token: str) -> str:
    """``text`` with word ``index`` (of :func:`words`) made a blank; its punctuation stays ("great." -> "[MASK].")."""
    parts = re.split(r"(\s+)", text)
    seen = -1
    for i, part in enumerate(parts):
        if part and not part.isspace():
            seen += 1
            if seen == index:
                core = CORE.search(part)
                parts[i] = token if core is None else part[: core.start()] + token + part[core.end() :]
                break
    return "".join(parts)


def blank_problem(text: str, token: str, most: int) -> Problem | None:
    """An empty or too long text, no blank, or more than ``most`` blanks (a decoder's one: its own message)."""
    if not text.strip():
        return Problem("fill_mask.empty", {"token": token})
    if len(text) > MAX_CHARS:
        return Problem("fill_mask.too_long_chars", {"chars": len(text), "limit": MAX_CHARS})
    blanks = blank_count(text, token)
    if blanks == 0:
        return Problem("fill_mask.no_blank", {"token": token})
    if blanks > most:
        key = "fill_mask.decoder_one_blank" if most == 1 else "fill_mask.too_many_blanks"
        return Problem(key, {"count": blanks, "limit": MAX_BLANKS if most == 1 else most})
    return None


def problem(loaded: LoadedModel, text: str, token: str) -> Problem | None:
    """What keeps ``text`` from being run (None when nothing does)."""
    wrong = blank_problem(text, token, MAX_BLANKS)
    if wrong is not None:
        return wrong
    encoded = loaded.text_encoder().encode(text)
    if encoded.original_length > loaded.config.max_len:
        return Problem("fill_mask.too_long_tokens", {"tokens": encoded.original_length, "limit": loaded.config.max_len})
    return None


def run_fill(key: str, loaded: LoadedModel, text: str, top_k: int = TOP_K) -> FillResult:
    """:func:`transformer.analysis.fill_mask` through the cached service (``ui.compute``): run in one of the
    process's analysis slots and kept for this session (the model is an upload), so the page's other
    widgets rerun it without running the model again."""
    c = loaded.config
    tokens = len(text)  # an upper bound of the pieces before the model's cut
    scratch = 4 * c.num_layers * c.num_heads * min(tokens, c.max_len) ** 2
    return compute("fill-mask", (text, top_k), lambda: fill_mask(loaded, text, top_k=top_k), model=key,
                   slot_bytes=scratch)  # fmt: skip


def blank_rows(result: FillResult, blank: int, layer: int) -> np.ndarray:
    """(H, T): every head's attention from blank ``blank`` (0-based) in ``layer`` (0-based)."""
    return result.attention[layer, :, result.blanks[blank].position, :]


def focus_floor(tokens: int) -> float:
    """The weight a head's strongest key must reach for the head to have looked at one token: twice
    an equal share (2 / T) and at least 0.2. Below it the row is too flat to name a word (a head giving
    ~0.1 to each of 10 tokens); 2 / T alone would call 0.06 of 40 tokens a focus, 0.2 alone would call
    an even split over 3 tokens (0.33 each) one."""
    return max(FOCUS_MIN, FOCUS_TIMES_EQUAL / max(tokens, 1))


def strongest(result: FillResult, blank: int) -> tuple[np.ndarray, list[list[str | None]]]:
    """Per layer and head, from blank ``blank``: the largest weight (L, H) and the token it went to
    (L × H), None where that weight is below :func:`focus_floor` (no clear focus)."""
    rows = result.attention[:, :, result.blanks[blank].position, :]  # (L, H, T)
    top, where = rows.max(-1), rows.argmax(-1)
    floor = focus_floor(rows.shape[-1])
    looked = [[result.tokens[i] if w >= floor else None for i, w in zip(idx, ws)] for idx, ws in zip(where, top)]
    return top, looked
