"""The Residual page's models, inputs and cached computations (no widgets here).

Models with an output vocabulary: the decoder-only language models (bundled, imported GPT-2), this
session's masked language models, and the translators (bundled, imported). Each is read at the
positions it predicts: a language model's next token after every position, a masked language
model's word at every position (the blank first), a translator's next target token at each step
of its greedy output. Every result goes through the cached service (``ui.compute``): shared for a
bundled model, this session's own for an upload.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer import LoadedModel
from transformer.analysis.language_check import model_languages
from transformer.core.bpe import EOT
from transformer.core.model import EncoderDecoder
from transformer.hf.spm import readable
from transformer.residual import Contributions, HeadEffects, Lens, contributions, head_effects, logit_lens, trace
from transformer.residual.contributions import ablation_limit
from transformer.residual.head_space import HeadSpace, layer_vectors, project, token_kind
from transformer.residual.lens import TOP

from . import session
from .compute import computed
from .fill_mask import mask_token, masked_models
from .language_models import KOREAN_EXAMPLE, KOREAN_LM, is_pretrained, language_models, load_lm, prompt_of
from .models import Selection, bundled_models, get_model, run_analysis
from .readable_tokens import never_offered, text_piece, token_shown, tokens_shown
from .text import examples, reads_korean
from .translation_models import load_translation, translation_models

LM, MLM, TRANSLATOR = "lm", "mlm", "translator"
MAX_SENTENCES = 40  # sentences one head-space picture reads
MAX_TRANSLATION = 40  # target tokens a translator writes for the page
SENTENCE_TOKENS = 64  # the head-space picture reads each sentence's first tokens (a sentence, not a document)
# What a model of each kind reads first (its input language, not the interface's): {token} is a
# masked model's blank
EXAMPLES = {
    LM: "The acting was wonderful and the story kept me",
    MLM: "The movie was {token}, I loved it.",
    TRANSLATOR: "The movie was great and the actors were not bad.",
}
EXAMPLE_MLM_KO = "영화가 정말 {token} 다시 보고 싶어요."
EXAMPLE_LM_KO = "배우들 연기가 정말 좋았고 이야기가 끝까지"  # Korean mode, on a model that reads Korean (review-lm)
EXAMPLE_PRETRAINED = "The capital of France is"  # SmolLM2 knows the answer: the lens shows where " Paris" wins


def vocabulary_models() -> dict[str, str]:
    """{display name: LM | MLM | TRANSLATOR}: every model this session can read through its vocabulary."""
    found = {name: LM for name in language_models()}
    found.update({name: MLM for name in masked_models()})
    found.update({name: TRANSLATOR for name in translation_models()})
    return found


def load(name: str, kind: str, device: str) -> LoadedModel:
    if kind == LM:
        return load_lm(name, device)
    if kind == TRANSLATOR:
        return load_translation(name, device)
    served = masked_models()
    return served[name] if name in served else get_model(Selection(name, device, 0))


def example_text(name: str, kind: str, device: str, lang: str = "en") -> str:
    """The text a model opens on: an example in the language it reads — Korean in Korean mode when it
    reads Korean (review-lm), "The capital of France is" on SmolLM2 (a bundled translator's first
    example pair is the page's choice, see ``pages/residual.py``)."""
    if kind == LM and is_pretrained(name):
        return EXAMPLE_PRETRAINED
    if kind == LM and name == KOREAN_LM:  # Gemma 3 reads both: the capital question in the page's language
        return KOREAN_EXAMPLE if lang == "ko" else EXAMPLE_PRETRAINED
    if kind == LM and lang == "ko" and "ko" in model_languages(load(name, kind, device).metrics):
        return EXAMPLE_LM_KO
    if kind != MLM:
        return EXAMPLES[kind]
    loaded = load(name, kind, device)
    example = EXAMPLE_MLM_KO if reads_korean(loaded.vocab) else EXAMPLES[MLM]
    return example.format(token=mask_token(loaded))


@dataclass(frozen=True)
class Reading:
    """What one text becomes for one model: ``ids`` the model's input, ``target`` a translator's
    decoder input (its greedy output, start token first; else empty), ``tokens`` one label per
    position read (the decoder's for a translator), ``source`` the source tokens (translators),
    ``start`` the position read first (the blank, the last token, the first step)."""

    ids: tuple[int, ...]
    target: tuple[int, ...]
    tokens: tuple[str, ...]
    source: tuple[str, ...]
    start: int
    special: tuple[bool, ...]
    cut: bool = False  # the text was longer than the model reads


@computed("residual-reading")
def reading(name: str, kind: str, device: str, text: str) -> Reading:
    """The text tokenised (and, for a translator, translated greedily) as the model reads it."""
    loaded = load(name, kind, device)
    if kind == LM:
        prompt = prompt_of(name, device, text)
        ids = tuple(prompt.ids[: loaded.config.max_len])
        start_id = loaded.lm_tokenizer.token_to_id(EOT)
        special = tuple(i == start_id for i in ids)
        cut = len(prompt.ids) > len(ids)
        return Reading(ids, (), tuple(prompt.tokens[: len(ids)]), (), len(ids) - 1, special, cut)
    encoder = loaded.text_encoder()
    encoded = encoder.encode(text, loaded.config.max_len, loaded.config.add_cls_token)
    ids = tuple(encoded.ids)
    if kind == MLM:
        blank = [i for i, index in enumerate(ids) if index == encoder.mask_id]
        special = tuple(bool(encoder.is_special(i)) for i in ids)
        start = blank[0] if blank else len(ids) - 1
        return Reading(ids, (), tuple(encoded.tokens), (), start, special, bool(encoded.truncated))
    model = loaded.model
    with torch.no_grad():
        out = model.greedy_decode(torch.tensor([ids], device=_device(model)), MAX_TRANSLATION)
    target = tuple(int(i) for i in out[0])
    tokens = tuple(readable(loaded.target_vocab.id_to_token(i)) for i in target)
    special = tuple(i in (loaded.config.bos_id, loaded.config.eos_id) for i in target)
    source = tuple(readable(s) for s in encoded.tokens)
    return Reading(ids, target, tokens, source, 0, special, bool(encoded.truncated))


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _tensors(model, r: Reading) -> tuple[torch.Tensor, torch.Tensor | None]:
    device = _device(model)
    target = torch.tensor([r.target], device=device) if r.target else None
    return torch.tensor([r.ids], device=device), target


@computed("residual-lens")
def lens_of(name: str, kind: str, device: str, r: Reading) -> Lens:
    """The logit lens; a language model's padding (never a next token) left out of its candidates."""
    loaded = load(name, kind, device)
    banned = never_offered(loaded) if kind == LM else frozenset()
    lens = logit_lens(loaded.model, *_tensors(loaded.model, r), top=TOP + len(banned))
    return without_tokens(lens, banned, TOP)


def without_tokens(lens: Lens, banned: frozenset[int], top: int) -> Lens:
    """``lens`` with the ``banned`` ids taken out of every cell's candidates, the first ``top`` left kept
    (in order); the answer and its rank are the model's own, untouched."""
    ids = lens.top_ids
    order = np.argsort(np.isin(ids, list(banned)), axis=-1, kind="stable")[..., :top]
    return Lens(np.take_along_axis(ids, order, -1), np.take_along_axis(lens.top_probs, order, -1), lens.answer,
                lens.answer_rank, lens.answer_prob)  # fmt: skip


@computed("residual-contributions")
def contributions_of(name: str, kind: str, device: str, r: Reading, position: int, token: int | None) -> Contributions:
    model = load(name, kind, device).model
    ids, target = _tensors(model, r)
    return contributions(model, ids, position, token, target)


@computed("residual-effects")
def effects_of(name: str, kind: str, device: str, r: Reading, position: int, token: int) -> HeadEffects:
    model = load(name, kind, device).model
    ids, target = _tensors(model, r)
    return head_effects(model, ids, position, token, target)


def ablation_tokens(name: str, kind: str, device: str, r: Reading, position: int) -> tuple[int, int, int] | None:
    """None when switching each head off fits its cost cap at ``position``, else (heads, the most tokens
    it reads on this model, the tokens it would read): a language model reads up to the position, a
    masked one the whole text; a translator's cross-attention heads are always within it."""
    if kind == TRANSLATOR:
        return None
    model = load(name, kind, device).model
    tokens = position + 1 if kind == LM else len(r.ids)
    limit = ablation_limit(model)
    return None if tokens <= limit else (model.config.num_layers * model.config.num_heads, limit, tokens)


def token_text(name: str, kind: str, device: str, index: int) -> str:
    """A vocabulary id as the page shows it (a leading space as ␣; a language model's token spelled
    out: ``ui.readable_tokens``)."""
    loaded = load(name, kind, device)
    if loaded.lm_tokenizer is not None:
        return token_shown(loaded, index)
    if kind == TRANSLATOR:
        return readable(loaded.target_vocab.id_to_token(index))
    encoder = loaded.text_encoder()
    return (
        encoder.show(loaded.vocab.id_to_token(index), index)
        if hasattr(encoder, "show")
        else loaded.vocab.id_to_token(index)
    )


def token_id(name: str, kind: str, device: str, text: str) -> int | None:
    """The id of a typed token (as the page shows tokens, ␣ for a leading space), None when the vocabulary lacks it."""
    loaded = load(name, kind, device)
    if loaded.lm_tokenizer is not None:
        return text_piece(loaded, text)
    vocab = loaded.target_vocab if kind == TRANSLATOR else loaded.vocab
    for spelling in (text, text.replace("␣", "▁")):
        if spelling in vocab:
            return vocab.token_to_id(spelling)
    return None


def position_labels(name: str, kind: str, device: str, r: Reading) -> list[str]:
    """The positions read, as the lens labels them: a language model's tokens spelled out (a character
    split over two tokens shown whole), other models' tokens as read."""
    if kind != LM:
        return list(r.tokens)
    return tokens_shown(load(name, kind, device), list(r.ids))


def _first_tokens(r: Reading) -> Reading:
    """A reading cut to its first SENTENCE_TOKENS positions (the head space's sentences), marked cut."""
    if len(r.ids) <= SENTENCE_TOKENS:
        return r
    n = SENTENCE_TOKENS
    return Reading(r.ids[:n], r.target, r.tokens[:n], r.source[:n], min(r.start, n - 1), r.special[:n], True)


@dataclass(frozen=True)
class SpaceView:
    """A head-space picture and what a click needs: the sentences' tokens and each point's token kind."""

    space: HeadSpace
    tokens: list[list[str]]
    kinds: np.ndarray


@computed("residual-head-space")
def head_space_of(name: str, kind: str, device: str, texts: tuple[str, ...], layer: int) -> SpaceView:
    """Queries and keys of ``layer``'s self-attention heads over ``texts`` (each run alone), in one PCA."""
    loaded = load(name, kind, device)
    model = loaded.model
    readings = [_first_tokens(reading(name, kind, device, text)) for text in texts[:MAX_SENTENCES]]

    def run(ids):
        if kind == LM:
            return model(ids, need_weights=True).attention
        if kind == TRANSLATOR:
            return model.encoder(ids, need_weights=True).attention
        return model(ids, need_weights=True).encoder.attention

    queries, keys, weights = layer_vectors(model, [r.ids for r in readings], layer, run, causal=kind == LM)
    space = project(queries, keys, weights)
    tokens = [r.source if isinstance(model, EncoderDecoder) else r.tokens for r in readings]
    specials = [r.special if not isinstance(model, EncoderDecoder) else (False,) * len(r.ids) for r in readings]
    kinds = np.array(
        [token_kind(tokens[s][p], specials[s][p]) for s, p in zip(space.sentence, space.position)], dtype=object
    )
    return SpaceView(space, tokens, kinds)


@computed("residual-attention-rows")
def attention_rows(name: str, kind: str, device: str, r: Reading, position: int, cross: bool = False) -> np.ndarray:
    """(L, H, T_k) float32 weights of the query at ``position``: self-attention (a translator's decoder
    self-attention), or a translator's cross-attention when ``cross``. One layer's weights at a time,
    only that row kept: never every layer's T × T_k."""
    model = load(name, kind, device).model
    ids, target = _tensors(model, r)
    traced = trace(model, ids, target, weights=False, row=position)
    records = traced.cross if cross else traced.attention
    return np.stack([w.weights[0, :, 0].float().cpu().numpy() for w in records])


def example_texts(name: str | None = None, kind: str | None = None, device: str = "cpu") -> tuple[str, ...]:
    """The bundled examples' lines, one sentence each where a line holds several: English, or Korean
    for a masked language model that reads Korean."""
    lang = "en"
    if kind == MLM and name is not None and reads_korean(load(name, kind, device).vocab):
        lang = "ko"
    lines = []
    for text in examples(lang).values():
        for line in text.splitlines():
            lines += [part.strip() + "." for part in line.split(". ") if part.strip(" .")]
    return tuple(line.replace("..", ".") for line in lines)[:MAX_SENTENCES]


def compare_example(lang: str) -> str:
    """The side-by-side view's first text: the first example in the interface's language (the
    models offered first, the course's, read that language)."""
    return next(iter(examples(lang).values())).splitlines()[0]


def compare_models() -> list[str]:
    """Models the side-by-side view can run: the bundled (and server) classifiers and this session's
    uploaded text encoders."""
    uploads = [key for key, m in session.uploads_of(LoadedModel).items() if m.config.kind == "classifier"]
    return bundled_models(("classifier",)) + uploads


@dataclass(frozen=True)
class SideView:
    """One model's reading of a text: tokens (unknown ones flagged), its label probabilities (None
    without a classification head) and attention (L, H, T, T)."""

    tokens: list[str]
    unknown: list[bool]
    labels: list[str]
    probabilities: np.ndarray | None
    attention: np.ndarray


def side_by_side(name: str, device: str, text: str) -> SideView:
    """The analysis the Playground runs (cached there too), cut to what the side-by-side view shows."""
    loaded = get_model(Selection(name, device, 0)) if session.is_upload(name) else None
    max_len = loaded.config.max_len if loaded is not None else _bundled_max_len(name, device)
    result = run_analysis(Selection(name, device, max_len), [text])
    probs = None if result.probabilities is None else result.probabilities[0]
    return SideView(result.tokens[0], result.unknown[0], list(result.label_names), probs, result.attention_for(0))


def _bundled_max_len(name: str, device: str) -> int:
    from .models import load_shared

    return load_shared(name, device).config.max_len


def settles_at(ranks: np.ndarray, within: int = 1) -> int | None:
    """The first reading (0 = the embedding, i = after layer i) from which the final answer is among the
    ``within`` likeliest guesses at every later reading (1: the top guess); ``ranks`` (R,) its rank per
    reading (0 = top). None when it is not at the last reading (never for ``within`` >= 1: the last
    reading is the model's own prediction) or ``ranks`` is empty."""
    top = np.asarray(ranks) < within
    if not top.size or not top[-1]:
        return None
    below = np.flatnonzero(~top)
    return int(below[-1]) + 1 if below.size else 0


def top_writers(c: Contributions, count: int = 5) -> list[tuple[str, int, int, float]]:
    """The ``count`` parts that pushed the logit up most, largest first: (kind, layer, head, share) with
    kind a ``stream`` kind (a head, a feed-forward block, the embedding…), layer and head 0-based (-1 where
    none). Only positive shares: the parts that wrote the token, not those that argued against it."""
    order = np.argsort(-c.values, kind="stable")
    return [
        (c.kinds[i], int(c.layers[i]), int(c.heads[i]), float(c.values[i])) for i in order[:count] if c.values[i] > 0
    ]
