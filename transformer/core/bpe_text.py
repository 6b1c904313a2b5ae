"""Prompts in and tokens out: ``<|endoftext|>`` + the byte-level BPE ids of the text, and each
token shown as the text it stands for."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tokenizers import Tokenizer

from .bpe import EOT, SPECIALS


@cache
def _byte_of_char() -> dict[str, int]:
    """The byte-level alphabet: printable bytes stand for themselves, the other 68 byte values are
    written as the characters from U+0100 on, in byte order (the GPT-2 convention ``tokenizers`` uses)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def token_bytes(piece: str) -> bytes | None:
    """The bytes a byte-level token stands for (None for special tokens such as ``<|endoftext|>``)."""
    table = _byte_of_char()
    if piece in SPECIALS or any(ch not in table for ch in piece):
        return None
    return bytes(table[ch] for ch in piece)


def show_token(tok: Tokenizer, index: int) -> str:
    """A token as readable text: its bytes as UTF-8, a leading space as ``␣``; bytes that are only part
    of a character (a Hangul syllable split over two tokens) as ``\\xNN``."""
    piece = tok.id_to_token(index)
    if piece is None:
        return f"<id {index}>"
    raw = token_bytes(piece)
    if raw is None:
        return piece
    text = raw.decode("utf-8", errors="backslashreplace")
    return "␣" + text[1:] if text.startswith(" ") else text


@dataclass(frozen=True)
class Prompt:
    """ids (with the start token first), tokens shown as text, whether the text was cut to fit."""

    ids: list[int]
    tokens: list[str]
    truncated: bool


def encode_prompt(
    tok: Tokenizer, text: str, max_len: int | None = None, own_tokens: bool = False, start_id: int | None = None
) -> Prompt:
    """``<|endoftext|>`` then the text's ids (the bundled model's convention: every document it was trained
    on began so); with ``own_tokens`` (an imported model), exactly the ids its tokenizer gives for the text,
    its own special tokens included and nothing added, and ``start_id`` alone for an empty text. With
    ``max_len``, cut to the first ``max_len`` ids. Tokens are the tokenizer's own strings with ``own_tokens``
    (``Ġmovie``), else shown as text (``␣movie``)."""
    if own_tokens:
        ids = tok.encode(text).ids if text else []
        if not ids and start_id is not None:
            ids = [start_id]
    else:
        ids = [tok.token_to_id(EOT), *tok.encode(text).ids]
    truncated = max_len is not None and len(ids) > max_len
    if truncated:
        ids = ids[:max_len]
    tokens = [tok.id_to_token(i) for i in ids] if own_tokens else [show_token(tok, i) for i in ids]
    return Prompt(ids, tokens, truncated)


def decode(tok: Tokenizer, ids: list[int]) -> str:
    """The text of ``ids`` (special tokens left out)."""
    return tok.decode(ids, skip_special_tokens=True)
