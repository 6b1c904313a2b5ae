"""Text -> the tokens and ids an imported model sees, with the contract of our
:class:`~transformer.tokenizer.TextEncoder` (``encode``/``encode_batch`` -> ``Encoded``).

Ids are exactly the reference tokenizer's (special tokens added as it adds them); tokens are shown
readably: a byte-level piece as its text with a leading space as ``␣`` (``Ġmovie`` -> ``␣movie``),
bytes that are only part of a character as ``\\xNN``; WordPiece pieces as they are (``##ing``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer

from ..core.bpe_text import _byte_of_char
from ..core.tokenizer import Encoded, Vocab

SPACE_MARK = "␣"


class PieceVocab(Vocab):
    """A :class:`Vocab` whose unknown and padding tokens have the model's own names ([UNK], [PAD],
    <|endoftext|>...) instead of ``<unk>`` and ``<pad>``."""

    def __init__(self, itos: Sequence[str], unk: str, pad: str) -> None:  # noqa: D107 - no base checks
        self._itos = list(itos)
        self._stoi = {}
        for i, token in enumerate(self._itos):
            self._stoi.setdefault(token, i)
        self._unk_id = self._stoi[unk]
        self._pad_id = self._stoi[pad]


@dataclass(frozen=True)
class PieceInfo:
    """What the encoder knows about the tokenizer: special ids, the unknown id, the mask's."""

    special_ids: frozenset[int]
    unk_id: int | None
    mask_id: int | None
    byte_level: bool


class HFTextEncoder:
    """Text -> :class:`~transformer.tokenizer.Encoded` through a ``tokenizers.Tokenizer``; immutable and
    shared between sessions (truncation is done per call, never set on the shared tokenizer)."""

    def __init__(self, tokenizer: Tokenizer, vocab: Vocab, info: PieceInfo) -> None:
        self.tokenizer = tokenizer
        self.vocab = vocab
        self.info = info
        processor = tokenizer.post_processor
        self._added = 0 if processor is None else processor.num_special_tokens_to_add(False)

    @property
    def mask_id(self) -> int | None:
        return self.info.mask_id

    def pieces(self, text: str) -> tuple[list[str], list[int]]:
        """The raw pieces and ids, as the reference tokenizer gives them (special tokens included)."""
        encoding = self.tokenizer.encode(text)
        return list(encoding.tokens), list(encoding.ids)

    def encode(self, text: str, max_len: int | None = None, add_cls: bool = False) -> Encoded:
        """``add_cls`` is accepted for the contract and ignored: the tokenizer adds its own [CLS]/<s>."""
        return self.encode_batch([text], max_len, add_cls)[0]

    def encode_batch(self, texts: Iterable[str], max_len: int | None = None, add_cls: bool = False) -> list[Encoded]:
        if max_len is not None and max_len < 1:
            raise ValueError(f"max_len must be at least 1, not {max_len}.")
        out = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"Input {index} is a {type(text).__name__}, not a str.")
            out.append(self._encode(text, max_len))
        return out

    def _encode(self, text: str, max_len: int | None) -> Encoded:
        content = self.tokenizer.encode(text, add_special_tokens=False)
        original = len(content.ids) + self._added
        truncated = max_len is not None and original > max_len
        if truncated:
            # keep the special tokens (as the reference's truncation does): cut the text's pieces only
            content.truncate(max(0, max_len - self._added))
        encoding = self.tokenizer.post_process(content)
        ids = list(encoding.ids)[: max_len if max_len is not None else None]
        tokens = [self.show(piece, i) for piece, i in zip(encoding.tokens, ids)]
        unknown = [i == self.info.unk_id for i in ids]  # [UNK] is a special token, and still an unknown piece
        return Encoded(tokens, ids, unknown, truncated, original)

    def decode(self, ids: list[int]) -> str:
        """``ids`` as text, the way the reference tokenizer writes them back (special tokens left out)."""
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def show(self, piece: str, index: int) -> str:
        """A piece as a reader sees it: special tokens as they are, byte-level pieces as text."""
        if index in self.info.special_ids or not self.info.byte_level:
            return piece
        table = _byte_of_char()
        if any(ch not in table for ch in piece):
            return piece
        text = bytes(table[ch] for ch in piece).decode("utf-8", errors="backslashreplace")
        return SPACE_MARK + text[1:] if text.startswith(" ") else text

    def is_special(self, index: int) -> bool:
        return index in self.info.special_ids


def piece_info(tokenizer: Tokenizer, specials: dict[str, str]) -> PieceInfo:
    """Special ids (every added token marked special), the unknown and mask ids, whether byte-level."""
    special = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}
    special |= {i for i in (tokenizer.token_to_id(t) for t in specials.values()) if i is not None}
    byte_level = _is_byte_level(tokenizer)
    unk = tokenizer.token_to_id(specials.get("unk_token", "")) if not byte_level else None
    others = {name: value for name, value in specials.items() if name != "unk_token"}
    if unk is not None and specials.get("unk_token") in others.values():
        unk = None  # the unknown token doubles as a structural one (an end token, say): no piece is "unknown"
    mask = tokenizer.token_to_id(specials["mask_token"]) if "mask_token" in specials else None
    return PieceInfo(frozenset(special), unk, mask, byte_level)


def _is_byte_level(tokenizer: Tokenizer) -> bool:
    """A BPE whose pre-tokeniser maps bytes to characters (GPT-2, RoBERTa)."""
    pre = tokenizer.pre_tokenizer
    names = {type(pre).__name__} | {type(p).__name__ for p in getattr(pre, "pretokenizers", []) or []}
    return type(tokenizer.model).__name__ == "BPE" and ("ByteLevel" in names or "ByteLevel" in repr(pre))
