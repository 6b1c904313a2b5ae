"""A Hugging Face folder's tokenizer, built with the ``tokenizers`` library (no ``transformers``).

Read from ``tokenizer.json`` when the folder has one; else built as the reference builds it from
``vocab.txt`` (WordPiece with BERT's normaliser, lower case per ``tokenizer_config.json``, [CLS] and
[SEP] around the text) or from ``vocab.json`` + ``merges.txt`` (byte-level BPE; RoBERTa's <s> and
</s> around the text, nothing added for GPT-2). Special tokens are registered as special, so a
typed ``[MASK]`` or ``<mask>`` is read as the mask token.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from ..checkpoints.errors import CheckpointError, CodedError
from .decoder_tokenizers import as_auto_tokenizer, decoder_specials
from .folder import DOWNLOAD_HINT, read_json

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
VOCAB_TXT, VOCAB_JSON, MERGES_TXT = "vocab.txt", "vocab.json", "merges.txt"
MAX_TOKENIZER_BYTES = 64 * 1024**2
DECODER_TYPES = ("llama", "mistral", "qwen2")  # read as transformers' classes read them (decoder_tokenizers)
# each model type's special tokens when tokenizer_config.json does not name them
DEFAULT_SPECIALS = {
    "wordpiece": {
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    },
    "roberta": {
        "bos_token": "<s>",
        "pad_token": "<pad>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "mask_token": "<mask>",
        "cls_token": "<s>",
        "sep_token": "</s>",
    },
    "gpt2": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"},
}


def load_tokenizer(folder: Path, model_type: str) -> tuple[Tokenizer, dict[str, str], str]:
    """(tokenizer, special tokens by role {"mask_token": "[MASK]", ...}, the file(s) it came from)."""
    settings = _settings(folder)
    if model_type in DECODER_TYPES:
        return _decoder_tokenizer(folder, settings)
    if (folder / TOKENIZER_JSON).is_file():
        tokenizer = _from_json(folder / TOKENIZER_JSON)
        return tokenizer, _specials(settings, _style(model_type)), TOKENIZER_JSON
    if (folder / VOCAB_TXT).is_file():
        specials = _specials(settings, "wordpiece")
        return _wordpiece(folder / VOCAB_TXT, settings, specials), specials, VOCAB_TXT
    if (folder / VOCAB_JSON).is_file() and (folder / MERGES_TXT).is_file():
        specials = _specials(settings, _style(model_type))
        return _byte_bpe(folder, settings, specials, model_type), specials, f"{VOCAB_JSON} + {MERGES_TXT}"
    message = (
        f"{folder.name} has no tokenizer: expected {TOKENIZER_JSON}, {VOCAB_TXT} (WordPiece) or {VOCAB_JSON} + "
        f"{MERGES_TXT} (byte-level BPE) beside config.json; {DOWNLOAD_HINT}."
    )
    raise CodedError("no_tokenizer", message, name=folder.name)


def _decoder_tokenizer(folder: Path, settings: dict) -> tuple[Tokenizer, dict[str, str], str]:
    """A Llama-family tokenizer as AutoTokenizer builds it from tokenizer.json (see ``decoder_tokenizers``)."""
    if not (folder / TOKENIZER_JSON).is_file():
        message = (
            f"{folder.name} has no {TOKENIZER_JSON}: Llama, Mistral and Qwen2 folders are read with the "
            f"{TOKENIZER_JSON} published beside their weights; {DOWNLOAD_HINT}."
        )
        raise CodedError("no_tokenizer", message, name=folder.name)
    tokenizer = as_auto_tokenizer(_from_json(folder / TOKENIZER_JSON), settings)
    return tokenizer, decoder_specials(settings), TOKENIZER_JSON


def _style(model_type: str) -> str:
    return {"roberta": "roberta", "gpt2": "gpt2"}.get(model_type, "wordpiece")


def _settings(folder: Path) -> dict:
    """tokenizer_config.json with special_tokens_map.json's entries over it (both optional)."""
    settings: dict = {}
    for name in (TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP):
        if (folder / name).is_file():
            settings.update(read_json(folder / name))
    return settings


def _specials(settings: dict, style: str) -> dict[str, str]:
    """Role -> token text; an entry may be a string or an AddedToken dict ({"content": ...})."""
    out = dict(DEFAULT_SPECIALS[style])
    for role in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token", "bos_token", "eos_token"):
        value = settings.get(role)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            out[role] = value
    return out


def _read_text(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_TOKENIZER_BYTES:
        raise CheckpointError(f"{path.name} is {size:,} bytes; a tokenizer file is a few MB (limit 64 MB).")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckpointError(f"{path.name} is not UTF-8 text: {DOWNLOAD_HINT}.") from err


def _from_json(path: Path) -> Tokenizer:
    try:
        tokenizer = Tokenizer.from_str(_read_text(path))
    except CheckpointError:
        raise
    except Exception as err:  # tokenizers raises its own Exception subclass for a bad file
        raise CheckpointError(
            f"{path.name} could not be read as a tokenizer ({str(err)[:200]}): {DOWNLOAD_HINT}."
        ) from err
    # A published tokenizer.json may carry a batch setting (all-MiniLM-L6-v2: pad every text to 128, truncate
    # at 128). transformers ignores both when it encodes one text; so do we: our own truncation applies the
    # model's maximum length, and padding is ours to add per batch.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _vocab_lines(path: Path) -> dict[str, int]:
    lines = _read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    vocab: dict[str, int] = {}
    for i, line in enumerate(lines):
        vocab.setdefault(line.removesuffix("\r"), i)
    return vocab


def _wordpiece(path: Path, settings: dict, specials: dict[str, str]) -> Tokenizer:
    vocab = _vocab_lines(path)
    missing = [t for t in (specials["unk_token"], specials["cls_token"], specials["sep_token"]) if t not in vocab]
    if missing:
        raise CheckpointError(f"{path.name} lacks {', '.join(missing)}: it is not this model's WordPiece vocabulary.")
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=specials["unk_token"]))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=bool(settings.get("tokenize_chinese_chars", True)),
        strip_accents=settings.get("strip_accents"),
        lowercase=bool(settings.get("do_lower_case", True)),
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    cls, sep = specials["cls_token"], specials["sep_token"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
    )
    _add_specials(tokenizer, specials, vocab, settings)
    return tokenizer


def _byte_bpe(folder: Path, settings: dict, specials: dict[str, str], model_type: str) -> Tokenizer:
    try:
        vocab = json.loads(_read_text(folder / VOCAB_JSON))
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{VOCAB_JSON} is not valid JSON: {DOWNLOAD_HINT}.") from err
    if not isinstance(vocab, dict) or not all(isinstance(v, int) for v in vocab.values()):
        raise CheckpointError(f"{VOCAB_JSON} must map tokens to ids: {DOWNLOAD_HINT}.")
    merges = []
    for line in _read_text(folder / MERGES_TXT).split("\n"):
        parts = line.removesuffix("\r").split(" ")
        if line.startswith("#version") or len(parts) != 2:
            continue
        merges.append((parts[0], parts[1]))
    prefix_space = bool(settings.get("add_prefix_space", False))
    tokenizer = Tokenizer(
        models.BPE(vocab, merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False)
    )
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    tokenizer.decoder = decoders.ByteLevel()
    if model_type == "roberta":
        sep, cls = specials["sep_token"], specials["cls_token"]
        if sep not in vocab or cls not in vocab:
            raise CheckpointError(f"{VOCAB_JSON} lacks {sep} or {cls}: it is not this model's vocabulary.")
        tokenizer.post_processor = processors.RobertaProcessing(
            (sep, vocab[sep]), (cls, vocab[cls]), bool(settings.get("trim_offsets", True)), prefix_space
        )
    _add_specials(tokenizer, specials, vocab, settings)
    return tokenizer


def _add_specials(tokenizer: Tokenizer, specials: dict[str, str], vocab: dict[str, int], settings: dict) -> None:
    """Register the special tokens that are in the vocabulary, with the flags tokenizer_config.json's
    ``added_tokens_decoder`` gives them (e.g. a <mask> that takes the space before it)."""
    flags = {}
    for entry in (settings.get("added_tokens_decoder") or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get("content"), str):
            flags[entry["content"]] = {k: bool(entry[k]) for k in ("lstrip", "rstrip", "single_word") if k in entry}
    for text in dict.fromkeys(specials.values()):
        if text in vocab:
            extra = flags.get(text, {})
            tokenizer.add_special_tokens([AddedToken(text, normalized=False, special=True, **extra)])
