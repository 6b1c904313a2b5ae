"""The tokenizer a GGUF file describes in its metadata (``tokenizer.ggml.*``), built with ``tokenizers``
to give exactly the ids transformers' GGUF tokenizer gives.

Two vocabularies (``tokenizer.ggml.model``):

- ``gpt2``: byte-level BPE (SmolLM2, Llama 3, Qwen2). Tokens not written in GPT-2's byte alphabet are
  respelled into it; the merges are the file's; the text is split by the pre-tokenizer the file names
  (``tokenizer.ggml.pre``: Llama 3's and Qwen2's patterns, then bytes as characters) or, for the others
  (SmolLM2's ``smollm``), by GPT-2's own split.
- ``llama``: SentencePiece-style BPE with byte fallback (Llama 2, TinyLlama, Mistral): spaces as ``▁``,
  one added before the text; merges from the file or, when it has none, rebuilt from the tokens' scores.

Tokens the file marks as control (``<|im_start|>``) are special and never split; user-defined ones are
added whole. A start token is added only where the file says ``tokenizer.ggml.add_bos_token`` (a
``llama`` vocabulary that does not say adds one, as llama.cpp does); an end token where it says
``add_eos_token``. The chat template (``tokenizer.chat_template``) is kept as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

from ..checkpoints.errors import CodedError, shown
from .gguf_file import GGUFFile, gguf_error
from .spm_merges import merges_from_scores

CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values
MAX_TOKEN_CHARS = 1024  # the longest token whose merges are rebuilt from scores (Llama 2's longest: 16)
BROKEN_VOCAB = "the vocabulary is damaged or was written wrongly: download the file again"
ROLES = {
    "bos_token": "bos_token_id",
    "eos_token": "eos_token_id",
    "unk_token": "unknown_token_id",
    "pad_token": "padding_token_id",
}

# the split each byte-level pre-tokenizer names (llama.cpp's patterns, as transformers' GGUF tokenizer uses them)
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPLITS = {
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "dbrx", "smaug-bpe"), LLAMA3_SPLIT),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez"), QWEN2_SPLIT),
}


@dataclass(frozen=True)
class GGUFTokenizer:
    """The built tokenizer, the special tokens by role (``{"eos_token": "<|im_end|>", ...}``), whether a
    start token is added, the chat template ("" when the file has none) and the vocabulary's kind."""

    tokenizer: Tokenizer
    specials: dict[str, str] = field(default_factory=dict)
    add_bos: bool = False
    chat_template: str = ""
    model: str = "gpt2"
    pre: str = ""


def gguf_tokenizer(file: GGUFFile, rows: int) -> GGUFTokenizer:
    """The tokenizer of ``file``, checked against the token embedding's ``rows``; CodedError when the file
    has no vocabulary, a kind this app cannot build, or more tokens than the embedding has rows."""
    meta = file.metadata
    tokens = meta.get("tokenizer.ggml.tokens")
    kind = meta.get("tokenizer.ggml.model")
    name = file.path.name
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        raise gguf_error(
            "no_tokenizer", f"{name} holds no vocabulary (tokenizer.ggml.tokens): it cannot be read as text.", file=name
        )
    if kind is None:
        message = (
            f"{name} does not say which kind of tokenizer its vocabulary is for (tokenizer.ggml.model is missing); "
            "this app builds 'gpt2' (byte-level BPE) and 'llama' (SentencePiece) ones: convert the model again "
            "with llama.cpp."
        )
        raise gguf_error("no_tokenizer_model", message, file=name)
    if not isinstance(kind, str) or kind not in BUILDERS:
        said = repr(shown(kind)) if isinstance(kind, str) else f"{shown(kind)} (not a name)"
        message = f"{name} describes a {said} tokenizer; this app builds 'gpt2' (byte-level BPE) and 'llama' (SentencePiece) ones."
        raise gguf_error("tokenizer_kind", message, file=name, kind=said)
    if len(tokens) > rows:
        message = (
            f"{name} lists {len(tokens):,} tokens but its token embedding has {rows:,} rows: the vocabulary does "
            "not belong to these weights. Download the file again."
        )
        raise gguf_error("tokenizer_mismatch", message, file=name, tokens=f"{len(tokens):,}", rows=f"{rows:,}")
    types = _list(meta, "tokenizer.ggml.token_type", len(tokens))
    tokenizer = _built(kind, meta, tokens, name, file.architecture)
    specials = _specials(meta, tokens, kind == "gpt2")
    add_bos = _flag(meta, "tokenizer.ggml.add_bos_token", kind == "llama") and "bos_token" in specials
    add_eos = _flag(meta, "tokenizer.ggml.add_eos_token", False) and "eos_token" in specials
    try:
        _add_specials(tokenizer, tokens, types, kind == "gpt2")
        for text in dict.fromkeys(specials.values()):  # the named specials are never split either
            tokenizer.add_special_tokens([AddedToken(text, normalized=False, special=True)])
        tokenizer.post_processor = _template(tokenizer, specials, add_bos, add_eos)
    except Exception as err:  # noqa: BLE001 - tokenizers' own refusal (a Rust Exception) as one sentence
        raise build_error(err, name) from None
    template = meta.get("tokenizer.chat_template")
    pre = meta.get("tokenizer.ggml.pre")
    return GGUFTokenizer(
        tokenizer,
        specials,
        add_bos,
        template if isinstance(template, str) else "",
        kind,
        pre if isinstance(pre, str) else "",
    )


def _list(meta: dict, key: str, length: int) -> list:
    value = meta.get(key)
    return value if isinstance(value, list) and len(value) == length else [0] * length


def _flag(meta: dict, key: str, default: bool) -> bool:
    value = meta.get(key)
    return value if isinstance(value, bool) else default


def _specials(meta: dict, tokens: list[str], byte_level: bool = False) -> dict[str, str]:
    """Role -> token text, for the ids the file names inside its vocabulary (in a byte-level vocabulary only
    those written in its alphabet, as for control tokens: another cannot be matched in text)."""
    spelled = set(byte_alphabet().values()) if byte_level else None
    out = {}
    for role, key in ROLES.items():
        index = meta.get(f"tokenizer.ggml.{key}")
        if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(tokens):
            if spelled is None or set(tokens[index]) <= spelled:
                out[role] = tokens[index]
    return out


@cache
def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the bytes of a byte-level vocabulary)."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def _built(kind: str, meta: dict, tokens: list[str], file: str, architecture: str = "") -> Tokenizer:
    """The tokenizer of ``kind`` built from the file's vocabulary (a Gemma 3 file's SentencePiece vocabulary
    by its own builder); CodedError when ``tokenizers`` refuses it (its own error, a Rust ``Exception``, said
    in one sentence naming the file)."""
    builder = BUILDERS[kind]
    if kind == "llama" and architecture == "gemma3":
        from .gemma3_gguf import gemma_tokenizer

        builder = gemma_tokenizer
    try:
        return builder(meta, tokens, file)
    except CodedError:
        raise
    except Exception as err:  # noqa: BLE001 - tokenizers raises a bare Exception for a vocabulary it refuses
        raise build_error(err, file) from None


def build_error(err: Exception, file: str) -> CodedError:
    reason = shown(" ".join(str(err).split()), 160)
    message = f"{file}: its vocabulary cannot be made into a tokenizer ({reason}): {BROKEN_VOCAB}."
    return gguf_error("tokenizer_build", message, file=file, reason=reason)


def checked_merges(merges: list[tuple[str, str]], vocab: dict[str, int], file: str) -> list[tuple[str, str]]:
    """``merges`` whose two tokens and their join are all in ``vocab`` (what ``tokenizers`` requires);
    CodedError naming the first merge that is not, and the token it lacks, escaped and cut."""
    for number, (left, right) in enumerate(merges, 1):
        missing = next((t for t in (left, right, left + right) if t not in vocab), None)
        if missing is not None:
            merge, token = f"'{shown(left, 30)}' + '{shown(right, 30)}'", f"'{shown(missing)}'"
            message = (
                f"{file}: merge {number:,} of tokenizer.ggml.merges ({merge}) needs the token {token}, which is not "
                f"in its vocabulary (tokenizer.ggml.tokens): {BROKEN_VOCAB}."
            )
            raise gguf_error("bad_merge", message, file=file, number=f"{number:,}", merge=merge, token=token)
    return merges


def _byte_level(meta: dict, tokens: list[str], file: str) -> Tokenizer:
    alphabet = byte_alphabet()
    spelled = set(alphabet.values())
    vocab = {}
    for index, token in enumerate(tokens):
        key = token if set(token) <= spelled else "".join(alphabet[b] for b in token.encode("utf-8"))
        vocab[key] = index
    merges = checked_merges(_merges(meta), vocab, file)
    model = models.BPE(
        vocab=vocab, merges=merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False
    )
    tok = Tokenizer(model)
    pre = meta.get("tokenizer.ggml.pre")
    split = SPLITS.get(pre) if isinstance(pre, str) else None  # not a name: GPT-2's own split
    if split is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(split), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    return tok


def _sentencepiece(meta: dict, tokens: list[str], file: str) -> Tokenizer:
    vocab = {token: index for index, token in enumerate(tokens)}
    if isinstance(meta.get("tokenizer.ggml.merges"), list):
        merges = checked_merges(_merges(meta), vocab, file)
    else:
        scores = meta.get("tokenizer.ggml.scores")
        if not isinstance(scores, list) or len(scores) != len(tokens):
            scores = [-float(i) for i in range(len(tokens))]
        _check_lengths(tokens, file)
        merges = merges_from_scores(vocab, dict(zip(tokens, scores)))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=True, byte_fallback=True, dropout=None))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(content=" ", left=1)]
    )
    return tok


def _merges(meta: dict) -> list[tuple[str, str]]:
    merges = meta.get("tokenizer.ggml.merges")
    if not isinstance(merges, list):
        return []
    return [tuple(m.split(" ", 1)) for m in merges if isinstance(m, str) and " " in m]


def _add_specials(tok: Tokenizer, tokens: list[str], types: list, byte_level: bool) -> None:
    """Control tokens as special (in a byte-level vocabulary only those written in its alphabet: another is a
    converter's mislabel), user-defined ones as plain added tokens kept whole."""
    spelled = set(byte_alphabet().values()) if byte_level else None
    control = [t for t, k in zip(tokens, types) if k == CONTROL and (spelled is None or set(t) <= spelled)]
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in control])
    vocab = tok.get_vocab()
    user = [t for t, k in zip(tokens, types) if k == USER_DEFINED and t in vocab]
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in user])


def _template(tok: Tokenizer, specials: dict[str, str], bos: bool, eos: bool) -> processors.TemplateProcessing:
    start = [specials["bos_token"]] if bos else []
    end = [specials["eos_token"]] if eos else []
    single = " ".join([f"{t}:0" for t in start] + ["$A:0"] + [f"{t}:0" for t in end])
    pair = " ".join([single] + [f"{t}:1" for t in start] + ["$B:1"] + [f"{t}:1" for t in end])
    used = dict.fromkeys(start + end)
    return processors.TemplateProcessing(
        single=single, pair=pair, special_tokens=[(t, tok.token_to_id(t)) for t in used]
    )


def _check_lengths(tokens: list[str], file: str) -> None:
    """Merges are rebuilt from the scores for tokens up to MAX_TOKEN_CHARS characters (Llama 2's longest has
    16); a longer one is refused, naming it, before any work."""
    longest = max(range(len(tokens)), key=lambda i: len(tokens[i]))
    if len(tokens[longest]) > MAX_TOKEN_CHARS:
        size, token = f"{len(tokens[longest]):,}", f"'{shown(tokens[longest], 30)}'"
        message = (
            f"{file}: token {longest:,} of its vocabulary ({token}) is {size} characters long; this app rebuilds a "
            f"SentencePiece vocabulary's merges for tokens up to {MAX_TOKEN_CHARS:,} characters: {BROKEN_VOCAB}."
        )
        raise gguf_error("token_too_long", message, file=file, index=f"{longest:,}", chars=size, limit=MAX_TOKEN_CHARS)


BUILDERS = {"gpt2": _byte_level, "llama": _sentencepiece}
