"""The decoder-only language models: the bundled ones, loaded once and shared (``ui.models.load_shared``),
and this session's imported GPT-2 folders (its upload registry, ``ui.session``); generation results kept
small and cached per input and settings by the cached service (``ui.compute``: an upload's in this
session's own store).

Both read text with their own byte-level BPE (``lm_tokenizer``); a prompt is the model's start token
(when it has one) and then the text's ids. The bundled model starts with ``<|endoftext|>``; an imported
one with the start id its config names when the tokenizer marks it special (GPT-2's ``<|endoftext|>``,
KoGPT-2's ``</s>``), else ``<|endoftext|>`` when its tokenizer has it, else nothing."""

from __future__ import annotations

import numpy as np
import torch

from transformer import LoadedModel
from transformer.core.bpe import EOT
from transformer.core.bpe_text import Prompt, encode_prompt
from transformer.core.decoder import KIND
from transformer.core.multihead import kv_head_of
from transformer.hf.gguf_import import gguf_in_folder
from transformer.hf.gguf_package import package_problem, read_manifest
from transformer.lm.decode import KEEP_TOP, Decoding, Generation, next_token_probs, step_rows
from transformer.lm.inspect import layer_attention
from transformer.lm.sampling import Sampling
from transformer.serving import batching_enabled, decoding_service

from . import session
from .compute import computed
from .i18n import current_lang, t
from .model_about import generator_line
from .models import MODELS_DIR, Selection, bundled_models, get_model, load_shared
from .readable_tokens import token_shown

DEFAULT_LM = "review-lm"  # trained here from nothing; reads English and Korean
PRETRAINED_LM = "smollm2-135m-instruct"  # SmolLM2-135M-Instruct, pretrained by Hugging Face; English only
KOREAN_LM = "gemma-3-270m"  # Gemma 3 270M, Google's multilingual base model (packages joined at first use)
DEFAULT_LMS = {"en": PRETRAINED_LM, "ko": KOREAN_LM}  # the language model each interface language starts on
KOREAN_EXAMPLE = "대한민국의 수도는 바로"  # Gemma knows the answer: " 서울" (17 %, its top guess from layer 17 of 18)
TOP = KEEP_TOP  # candidates kept per step: the bars and the force menu
# SmolLM2 reads English only: its examples are English in both interface languages
PRETRAINED_EXAMPLE = "Once upon a time, there was a little girl who"
CHAT_EXAMPLE = "What is the capital of Korea?"


def default_lm(lang: str) -> str:
    """The language model the pages start on in ``lang``: SmolLM2 in English, Gemma 3 in Korean (SmolLM2 reads
    English only), each when it is there; else review-lm."""
    name = DEFAULT_LMS.get(lang, DEFAULT_LM)
    return name if name in bundled_language_models() else DEFAULT_LM


def bundled_language_models() -> list[str]:
    """Bundled language models: folders of kind ``language-model`` and folders holding one GGUF file; a GGUF
    installed as packages in chunks only when they are there and join into the published file (the first
    call joins it: ``transformer.hf.gguf_package``)."""
    gguf = [folder.name for folder in sorted(MODELS_DIR.iterdir()) if gguf_in_folder(folder) is not None]
    return [name for name in bundled_models((KIND,)) + gguf if _ready(MODELS_DIR / name)]


def _ready(folder) -> bool:
    """Not a packaged model, or one whose packages are there and joined (``package_problem``)."""
    return read_manifest(folder) is None or package_problem(str(folder)) is None


def korean_lm_problem() -> str | None:
    """Why the Korean default (Gemma 3) is not offered — the message naming the package to reinstall — or
    None when it is ready (or not bundled at all)."""
    folder = MODELS_DIR / KOREAN_LM
    if read_manifest(folder) is None:
        return None
    return package_problem(str(folder))


def language_models() -> list[str]:
    """Bundled language models, the interface language's default first (SmolLM2 in English, review-lm in
    Korean), then this session's imported language models (``upload: <folder>``)."""
    first = default_lm(current_lang())
    bundled = sorted(dict.fromkeys(bundled_language_models()), key=lambda n: (n != first, n != DEFAULT_LM))
    return bundled + imported_language_models()


def is_pretrained(name: str) -> bool:
    """The English-only bundled model pretrained by others (SmolLM2): its examples are English in either
    interface language."""
    return name == PRETRAINED_LM


def example_prompt(name: str) -> str:
    """The prompt a language model opens on: English on SmolLM2, "대한민국의 수도는 바로" on Gemma 3 in Korean
    ("The capital of France is" in English), else the interface language's example."""
    if is_pretrained(name):
        return PRETRAINED_EXAMPLE
    if name == KOREAN_LM:
        return KOREAN_EXAMPLE if current_lang() == "ko" else "The capital of France is"
    return t("generate.example")


def about_lm(name: str, loaded, imported: bool) -> str:
    """What the language model is, for a caption: SmolLM2 (pretrained by others on a large English corpus,
    instruction-tuned, 4-bit, English only), Gemma 3 (Google's base model, community 4-bit, its terms),
    review-lm (trained here from nothing), an import."""
    if is_pretrained(name):
        return t("generate.about_smollm2", name=name)
    if name == KOREAN_LM:
        return t("generate.about_gemma", name=name)
    return generator_line(name, loaded, imported)


def about_short(name: str, loaded, imported: bool) -> str:
    """:func:`about_lm` in one line (for the first screen): SmolLM2's and Gemma's short descriptions, else the same."""
    if is_pretrained(name):
        return t("residual.about_smollm2", name=name)
    if name == KOREAN_LM:
        return t("residual.about_gemma", name=name)
    return about_lm(name, loaded, imported)


def korean_default_note(name: str) -> str | None:
    """In Korean mode on review-lm when Gemma 3 should have been the default: why it is not there (the
    package to reinstall); None otherwise."""
    if current_lang() != "ko" or name != DEFAULT_LM or (problem := korean_lm_problem()) is None:
        return None
    return t("generate.gemma_unavailable", problem=problem)


def local_layers_caption(config) -> str | None:
    """What a model's local (sliding-window) layers let a piece see, for a caption; None without any."""
    if not config.local_layers:
        return None
    layers = ", ".join(str(i + 1) for i in config.local_layers)
    return t("common.local_layers", layers=layers, window=config.local_window)


def attention_notes(config, tail: str) -> tuple[list[str], tuple[int, ...] | None]:
    """The captions Generate and the head atlas write about a language model's attention: its local
    layers, and its grouped-query heads (the shared sentence, then ``tail``, what the page shows of
    them); and the key/value head (0-based) each query head reads, None without grouped-query attention."""
    notes = [note] if (note := local_layers_caption(config)) else []
    if config.kv_heads == config.num_heads:
        return notes, None
    group = config.num_heads // config.kv_heads
    notes.append(t("generate.kv_groups", heads=config.num_heads, kv=config.kv_heads, group=group) + " " + tail)
    return notes, kv_head_of(config.num_heads, config.num_kv_heads)


def imported_language_models() -> list[str]:
    """This session's uploads that are language models (an imported GPT-2 folder), by display name."""
    return [key for key, m in session.uploads_of(LoadedModel).items() if m.config.kind == KIND and m.lm_tokenizer]


def load_lm(name: str, device: str) -> LoadedModel:
    if session.is_upload(name):
        return get_model(Selection(name, device, 0))  # this session's own, moved to ``device`` when asked
    return load_shared(name, device)


def is_imported(loaded: LoadedModel) -> bool:
    """A model read from a Hugging Face folder (it has the reference tokenizer's text encoder)."""
    return getattr(loaded, "encoder", None) is not None


def start_id(loaded: LoadedModel) -> int | None:
    """The token a prompt starts with: the bundled model's ``<|endoftext|>``; for an imported model the
    config's start id when its tokenizer marks that id special, else its ``<|endoftext|>``, else None."""
    tok = loaded.lm_tokenizer
    if not is_imported(loaded):
        return tok.token_to_id(EOT)
    if loaded.encoder.is_special(loaded.config.bos_id):
        return loaded.config.bos_id
    return tok.token_to_id(EOT)


def start_token(name: str, device: str) -> str | None:
    """The start token's text (``<|endoftext|>``, ``</s>``), None when prompts start with the text."""
    loaded = load_lm(name, device)
    first = start_id(loaded)
    return None if first is None else loaded.lm_tokenizer.id_to_token(first)


def prompt_of(name: str, device: str, text: str, prepend_start: bool = False) -> Prompt:
    """The prompt's ids and tokens, not cut (the page says when it is too long).

    The bundled model reads ``<|endoftext|>`` first, as every document it was trained on began. An imported
    model reads exactly what its own tokenizer gives (what transformers computes for the same text: a Llama
    tokenizer adds its ``<s>``, GPT-2's adds nothing); ``prepend_start`` puts its start token first
    (TransformerLens' convention), and an empty text is that start token alone."""
    loaded = load_lm(name, device)
    if not is_imported(loaded):
        return encode_prompt(loaded.lm_tokenizer, text)
    first = start_id(loaded)
    ids = loaded.lm_tokenizer.encode(text).ids if text else []
    if first is not None and (not ids or (prepend_start and ids[0] != first)):
        ids = [first, *ids]
    return Prompt(ids, [_piece(loaded, i) for i in ids], False)


def _piece(loaded: LoadedModel, token_id: int) -> str:
    """A prompt's token as its tokenizer shows it (special tokens by their own names: the chips and the
    head roles recognise them)."""
    piece = loaded.lm_tokenizer.id_to_token(token_id)
    return f"<id {token_id}>" if piece is None else loaded.encoder.show(piece, token_id)


def token_text(name: str, device: str, token_id: int) -> str:
    """A token as the pages show it alone (``ui.readable_tokens``: ␣ a space, ↵ a newline, ⟨…⟩ a special token)."""
    return token_shown(load_lm(name, device), token_id)


def continuation(name: str, device: str, ids: list[int]) -> str:
    return load_lm(name, device).lm_tokenizer.decode(ids, skip_special_tokens=True)


def _gates(gates: tuple[tuple[float, ...], ...] | None) -> torch.Tensor | None:
    return None if gates is None else torch.tensor(gates, dtype=torch.float32)


# batched generations wait for the process's decoding scheduler, which bounds their work itself: no analysis slot
@computed("lm-generation", slot=not batching_enabled())
def run_generation(
    name: str,
    device: str,
    ids: tuple[int, ...],
    steps: int,
    sampling: Sampling,
    forced: tuple[tuple[int, int], ...] = (),
    gates: tuple[tuple[float, ...], ...] | None = None,
) -> Generation:
    """Generation with the cache, through the process's decoding service (every session's generations
    stepped together); each step keeps its TOP likeliest tokens and the attention rows (what the page draws)."""
    model = load_lm(name, device).model
    return decoding_service().generate(Decoding(model, list(ids), steps, sampling, dict(forced), _gates(gates)))


@computed("lm-step-rows")
def step_attention(name: str, device: str, ids: tuple[int, ...], gates=None) -> np.ndarray:
    """(L, H, T) the attention row of the last of ``ids`` over them: a step's rows when its generation kept
    none (past ``transformer.lm.decode.ROWS_BUDGET``)."""
    return step_rows(load_lm(name, device).model, list(ids), _gates(gates))


def rows_of(name: str, device: str, step, prefix_ids: list[int], gates=None) -> np.ndarray:
    """A step's attention rows (L, H, T): kept with the step, else recomputed for its prefix."""
    return step.attention if step.attention is not None else step_attention(name, device, tuple(prefix_ids), gates)


@computed("lm-layer-attention")
def prefix_attention(name: str, device: str, ids: tuple[int, ...], layer: int, gates=None) -> np.ndarray:
    """(H, T, T) masked self-attention of layer ``layer`` (0-based) over ``ids``: one layer's, not every layer's."""
    return layer_attention(load_lm(name, device).model, list(ids), layer, _gates(gates))


@computed("lm-next-distribution")
def next_distribution(name: str, device: str, ids: tuple[int, ...], gates=None) -> np.ndarray:
    """(V,) float32 next-token probabilities after ``ids`` with the given heads on."""
    return next_token_probs(load_lm(name, device).model, list(ids), _gates(gates)).astype(np.float32)


def top_next(name: str, device: str, ids: tuple[int, ...], k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` most likely next tokens after ``ids`` as (token text, probability), most likely first."""
    probs = next_distribution(name, device, ids)
    order = np.argsort(-probs, kind="stable")[:k]
    return [(token_text(name, device, int(i)), float(probs[i])) for i in order]
