"""The tokenizer of a Llama-family folder exactly as transformers' ``AutoTokenizer`` gives it.

transformers (5.x) reads ``tokenizer.json`` in one of two ways, by ``tokenizer_config.json``'s
``tokenizer_class``:

- ``PreTrainedTokenizerFast`` / ``TokenizersBackend`` (Llama 3) or no class: the file as it is;
- a class with its own pipeline (``LlamaTokenizer``: SentencePiece-style BPE with byte fallback,
  ``▁`` for spaces; ``Qwen2Tokenizer``: NFC, Qwen's split pattern, byte-level; ``GPT2Tokenizer``:
  GPT-2's byte-level, used by SmolLM): only the vocabulary, merges, added tokens and post-processor
  are taken from the file, the normaliser and pre-tokeniser are the class's own.

The start and end tokens are the file's post-processor's, whatever ``add_bos_token`` / ``add_eos_token`` in
tokenizer_config.json say (transformers drops both flags when a tokenizer.json is there); a file without a
post-processor adds none. So no start token is added that the tokenizer does not add.
"""

from __future__ import annotations

import json

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

# Qwen2Tokenizer's split pattern (contractions, letters, single digits, punctuation, spaces)
QWEN2_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
# each class's special tokens when tokenizer_config.json does not name them
CLASS_SPECIALS = {
    "LlamaTokenizer": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
    "Qwen2Tokenizer": {"unk_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
    "GPT2Tokenizer": {"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
}
ROLES = ("unk_token", "bos_token", "eos_token", "pad_token")


def tokenizer_class(settings: dict) -> str:
    """tokenizer_config.json's class without its "Fast" ("LlamaTokenizerFast" -> "LlamaTokenizer")."""
    name = settings.get("tokenizer_class")
    return name.removesuffix("Fast") if isinstance(name, str) else ""


def decoder_specials(settings: dict) -> dict[str, str]:
    """Role -> token text: the class's defaults, then what tokenizer_config.json names."""
    out = dict(CLASS_SPECIALS.get(tokenizer_class(settings), {}))
    for role in ROLES:
        value = settings.get(role)
        value = value.get("content") if isinstance(value, dict) else value
        if isinstance(value, str):
            out[role] = value
        elif role in settings and value is None:
            out.pop(role, None)
    return out


def as_auto_tokenizer(file_tokenizer: Tokenizer, settings: dict) -> Tokenizer:
    """The tokenizer AutoTokenizer builds from ``file_tokenizer`` (tokenizer.json as read) and ``settings``
    (tokenizer_config.json + special_tokens_map.json)."""
    build = BUILDERS.get(tokenizer_class(settings))
    return file_tokenizer if build is None else _rebuilt(file_tokenizer, settings, build)


def _rebuilt(file_tokenizer: Tokenizer, settings: dict, build) -> Tokenizer:
    """The class's pipeline over the file's vocabulary and merges, with the file's added tokens and post-processor."""
    model = json.loads(file_tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model.get("merges", [])]
    out = build(model["vocab"], merges, settings)
    out.post_processor = file_tokenizer.post_processor
    added = sorted(file_tokenizer.get_added_tokens_decoder().items())
    out.add_special_tokens([t for _, t in added if t.special])
    out.add_tokens([t for _, t in added if not t.special])
    for text in dict.fromkeys(decoder_specials(settings).values()):
        if out.token_to_id(text) is not None:
            out.add_special_tokens([AddedToken(text, normalized=False, special=True)])
    return out


def _llama(vocab: dict, merges: list, settings: dict) -> Tokenizer:
    """LlamaTokenizer: BPE with byte fallback, no normaliser, spaces as ``▁`` and one before the text
    ("first"; "always", before every piece between special tokens, where ``legacy`` is true)."""
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=True, byte_fallback=True, dropout=None))
    prefix = settings.get("add_prefix_space")
    prefix = True if prefix is None else bool(prefix)
    scheme = ("always" if settings.get("legacy", False) else "first") if prefix else "never"
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme, split=False)
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    tok.decoder = decoders.Sequence(steps + ([decoders.Strip(content=" ", left=1)] if prefix else []))
    return tok


def _byte_bpe(vocab: dict, merges: list) -> Tokenizer:
    return Tokenizer(
        models.BPE(
            vocab=vocab,
            merges=merges,
            dropout=None,
            continuing_subword_prefix="",
            end_of_word_suffix="",
            fuse_unk=False,
        )
    )


def _qwen2(vocab: dict, merges: list, settings: dict) -> Tokenizer:
    """Qwen2Tokenizer: NFC, Qwen's split pattern, then bytes as characters (no added prefix space)."""
    tok = _byte_bpe(vocab, merges)
    tok.normalizer = normalizers.NFC()
    prefix = bool(settings.get("add_prefix_space") or False)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=prefix, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    return tok


def _gpt2(vocab: dict, merges: list, settings: dict) -> Tokenizer:
    """GPT2Tokenizer: GPT-2's byte-level split (SmolLM's folders name this class)."""
    tok = _byte_bpe(vocab, merges)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=bool(settings.get("add_prefix_space") or False))
    tok.decoder = decoders.ByteLevel()
    return tok


BUILDERS = {"LlamaTokenizer": _llama, "Qwen2Tokenizer": _qwen2, "GPT2Tokenizer": _gpt2}
