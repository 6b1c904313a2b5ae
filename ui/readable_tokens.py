"""Tokens as a reader sees them, for the logit lens, the next-token bars and the chat view.

A byte-level BPE token is a run of bytes written in GPT-2's byte alphabet (``Ġ`` a space, ``Ċ`` a
newline, ``ìĿ´`` the three bytes of 이); a SentencePiece token writes a space as ``▁`` and a lone byte
as ``<0x0A>``. :func:`piece_bytes` gives the bytes a piece stands for, :func:`spelled` shows them:
complete UTF-8 characters as themselves, a space as ``␣``, a newline as ``↵``, a tab as ``⇥``, other
control characters as ``<02>`` and a run of bytes that are only part of a character as ``<BD94>`` (their
hexadecimal values: a lone part of a character spells nothing by itself). :func:`spelled_sequence` joins the pieces of a text: a character split over two
tokens is shown whole on each, ``…`` on the side its other part is. Special tokens are marked
``⟨endoftext⟩``, never shown as text a model wrote.
"""

from __future__ import annotations

import re

from transformer.core.bpe import SPECIALS
from transformer.core.bpe_text import _byte_of_char
from transformer.core.tokenizer import PAD, UNK

SPACE, NEWLINE, TAB = "␣", "↵", "⇥"
PART = "…"  # the side of a token where the rest of its character is
_SPM_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_DECORATION = re.compile(r"^(?:<\|(.+)\|>|<(.+)>|\[(.+)\])$")
VISIBLE = {" ": SPACE, "\n": NEWLINE, "\t": TAB}


def special_text(piece: str) -> str:
    """A special token marked: ``<|endoftext|>`` -> ``⟨endoftext⟩``, ``</s>`` -> ``⟨/s⟩``, ``[CLS]`` -> ``⟨CLS⟩``."""
    found = _DECORATION.match(piece)
    core = next((g for g in found.groups() if g), piece) if found else piece
    return f"⟨{core}⟩"


def piece_bytes(piece: str, byte_level: bool) -> bytes | None:
    """The bytes a piece stands for: byte-level BPE in GPT-2's alphabet, else SentencePiece (``▁`` a
    space, ``<0xNN>`` one byte); None when a byte-level piece has a character outside the alphabet."""
    if byte_level:
        table = _byte_of_char()
        if any(ch not in table for ch in piece):
            return None
        return bytes(table[ch] for ch in piece)
    found = _SPM_BYTE.match(piece)
    if found:
        return bytes([int(found[1], 16)])
    return piece.replace("▁", " ").encode("utf-8")


def _char(ch: str) -> str:
    if ch in VISIBLE:
        return VISIBLE[ch]
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029):
        return f"<{code:02X}>" if code < 0x100 else f"<U+{code:04X}>"
    return ch


def _bytes_text(raw: bytes) -> str:
    """Bytes decoded where they make whole characters; a run of bytes that do not as one ``<BD94>``
    (their hexadecimal values: short enough for a lens cell)."""
    text = raw.decode("utf-8", errors="surrogateescape")
    out, loose = [], []
    for ch in text + "\0":
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            loose.append(f"{code - 0xDC00:02X}")
            continue
        if loose:
            out.append("<" + "".join(loose) + ">")
            loose = []
        out.append(_char(ch))
    return "".join(out[:-1])


def spelled(raw: bytes | None, piece: str, special: bool = False) -> str:
    """One token shown on its own (a next-token candidate): see the module's docstring."""
    if special or raw is None:
        return special_text(piece) if special else piece
    return _bytes_text(raw) if raw else piece


def _char_length(lead: int) -> int:
    return (
        1
        if lead < 0x80
        else 2
        if lead >> 5 == 0b110
        else 3
        if lead >> 4 == 0b1110
        else 4
        if lead >> 3 == 0b11110
        else 0
    )


def spelled_sequence(pieces: list[bytes | None], names: list[str], special: list[bool]) -> list[str]:
    """The tokens of one text, each shown as what it spells in the text: a token holding part of a
    character shows the whole character, with ``…`` on the side where the rest of it is (in the token
    before or after). Special tokens are marked; a piece with no bytes is shown as its name."""
    shown = [spelled(raw, name, flag) for raw, name, flag in zip(pieces, names, special)]
    joined, owner = bytearray(), []
    for index, raw in enumerate(pieces):
        if raw is None or special[index]:
            continue
        joined += raw
        owner += [index] * len(raw)
    spans: dict[int, list[tuple[int, int]]] = {}
    i = 0
    while i < len(joined):
        size = _char_length(joined[i]) or 1
        chunk = bytes(joined[i : i + size])
        tokens = sorted(set(owner[i : i + size]))
        if len(tokens) > 1 and _decodes(chunk):
            for token in tokens:
                spans.setdefault(token, []).append((i, i + size))
        i += size
    for token, found in spans.items():
        start = min(a for a, _ in found)
        end = max(b for _, b in found)
        own = [k for k, o in enumerate(owner) if o == token]
        start, end = min(start, own[0]), max(end, own[-1] + 1)
        text = _bytes_text(bytes(joined[start:end]))
        before = PART if owner[start] != token else ""
        after = PART if owner[end - 1] != token else ""
        shown[token] = before + text + after
    return shown


def _decodes(chunk: bytes) -> bool:
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def model_piece(loaded, index: int) -> tuple[bytes | None, str, bool]:
    """(bytes, piece, is special) of a language model's token ``index``: the bundled model's byte-level
    BPE (``<unk>``, ``<pad>``, ``<|endoftext|>`` special), or an imported model's tokenizer."""
    piece = loaded.lm_tokenizer.id_to_token(index)
    if piece is None:
        return None, f"<id {index}>", False
    encoder = getattr(loaded, "encoder", None)
    if encoder is None:
        special = piece in SPECIALS
        return (None if special else piece_bytes(piece, True)), piece, special
    if encoder.is_special(index):
        return None, piece, True
    return piece_bytes(piece, encoder.info.byte_level), piece, False


def token_shown(loaded, index: int) -> str:
    """A language model's token ``index`` shown alone (:func:`spelled`)."""
    return spelled(*model_piece(loaded, index))


def tokens_shown(loaded, ids: list[int]) -> list[str]:
    """A text's tokens (``ids``) shown as what they spell in it (:func:`spelled_sequence`)."""
    parts = [model_piece(loaded, int(i)) for i in ids]
    return spelled_sequence([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts])


def never_offered(loaded) -> frozenset[int]:
    """Token ids never shown as a next-token candidate: padding (and the bundled model's ``<unk>``),
    which the model never saw as a next token; a pad token that is also the end or start token is kept."""
    tok = loaded.lm_tokenizer
    found = {tok.token_to_id(name) for name in (PAD, UNK)} if getattr(loaded, "encoder", None) is None else set()
    cfg = loaded.config
    pad = tok.id_to_token(cfg.pad_id) or ""
    if (
        getattr(loaded, "encoder", None) is not None
        and "pad" in pad.lower()
        and cfg.pad_id not in (cfg.bos_id, cfg.eos_id)
    ):
        found.add(cfg.pad_id)  # a config's pad id is often a default (1), not a padding token: only one named so
    return frozenset(i for i in found if i is not None)


def text_piece(loaded, typed: str) -> int | None:
    """The id of a token typed as the pages show it (``␣the``, ``이``, ``⟨endoftext⟩``) or as the
    tokenizer writes it (``Ġthe``); None when the vocabulary has no such single token."""
    tok = loaded.lm_tokenizer
    found = tok.token_to_id(typed)
    if found is not None:
        return found
    if len(typed) > 2 and typed[0] == "⟨" and typed[-1] == "⟩":
        core = typed[1:-1]
        return next((i for i in map(tok.token_to_id, (f"<|{core}|>", f"<{core}>", f"[{core}]")) if i is not None), None)
    raw = typed.replace(SPACE, " ").replace(NEWLINE, "\n").replace(TAB, "\t").encode("utf-8")
    encoder = getattr(loaded, "encoder", None)
    if encoder is None or encoder.info.byte_level:
        alphabet = {b: ch for ch, b in _byte_of_char().items()}
        return tok.token_to_id("".join(alphabet[b] for b in raw))
    return tok.token_to_id(raw.decode("utf-8").replace(" ", "▁"))
