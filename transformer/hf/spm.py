"""Marian's tokenizer: SentencePiece models (``source.spm`` for the text to translate, ``target.spm``
for translations) whose pieces are looked up in ``vocab.json`` (``target_vocab.json`` where the
two sides have their own), ``</s>`` after every text. The ids are those of transformers'
``MarianTokenizer``; a piece missing from the vocabulary is ``<unk>``, a leading language code
such as ``>>kor<<`` is one token.

SentencePiece marks the start of a word with ``▁`` ("▁the", "▁영화", "는"): :func:`readable` shows
it as ``␣``, the app's mark for a leading space. One difference from transformers, on purpose:
``</s>``, ``<pad>`` or ``<unk>`` typed inside the text are read as text, not as special tokens
(user text cannot inject them; the same rule as :class:`~transformer.tokenizer.TextEncoder`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.tokenizer import PAD, UNK, Vocab

SOURCE_SPM, TARGET_SPM = "source.spm", "target.spm"
VOCAB_JSON, TARGET_VOCAB_JSON = "vocab.json", "target_vocab.json"
EOS = "</s>"
SPECIALS = (EOS, UNK, PAD)
WORD_START = "▁"  # SentencePiece's mark on a piece that starts a word
SHOWN_WORD_START = "␣"
MAX_SPM_BYTES = 32 * 1024**2  # opus-mt's are about 1 MB
MAX_VOCAB_BYTES = 32 * 1024**2  # a 65,000-entry vocab.json is about 1.5 MB


def readable(piece: str) -> str:
    """A piece as the pages show it: a word start ``▁`` as ``␣`` ("▁movie" -> "␣movie")."""
    return SHOWN_WORD_START + piece[1:] if piece.startswith(WORD_START) else piece


@dataclass(frozen=True)
class MarianPieces:
    """One text read by Marian's tokenizer: pieces (``</s>`` last), their ids, and which ids are
    ``<unk>`` (a piece the vocabulary lacks)."""

    pieces: list[str]
    ids: list[int]
    unknown: list[bool]

    @property
    def shown(self) -> list[str]:
        """The pieces with word starts written as ``␣``."""
        return [readable(p) for p in self.pieces]


def _read_spm(path: Path):
    """A SentencePiece model from ``path``; ValueError naming the file when it is too large or not one."""
    import sentencepiece

    if not path.is_file():
        raise FileNotFoundError(f"{path.name} is missing: a Marian folder holds {SOURCE_SPM} and {TARGET_SPM}.")
    size = path.stat().st_size
    if size > MAX_SPM_BYTES:
        raise ValueError(f"{path.name} is {size:,} bytes; a SentencePiece model is a few MB at most.")
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(path.read_bytes())
    except (RuntimeError, OSError) as err:
        raise ValueError(f"{path.name} is not a SentencePiece model ({err}).") from err
    return processor


def read_vocab_json(path: Path) -> Vocab:
    """``vocab.json`` (piece -> id) as our Vocab; ValueError naming the file when the ids are not
    0 .. N-1 or it lacks ``<unk>`` / ``<pad>``."""
    if not path.is_file():
        raise FileNotFoundError(f"{path.name} is missing: keep the tokenizer files beside the model.")
    size = path.stat().st_size
    if size > MAX_VOCAB_BYTES:
        raise ValueError(f"{path.name} is {size:,} bytes; a vocabulary is a few MB at most.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as err:
        raise ValueError(f"{path.name} is not valid JSON ({type(err).__name__}).") from err
    if not isinstance(data, dict) or not all(isinstance(i, int) and not isinstance(i, bool) for i in data.values()):
        raise ValueError(f"{path.name} must map each piece to its id (a whole number).")
    itos: list[str | None] = [None] * len(data)
    for piece, index in data.items():
        if not 0 <= index < len(itos) or itos[index] is not None:
            raise ValueError(f"{path.name}: the ids must be 0 .. {len(itos) - 1}, each once; {piece!r} has {index}.")
        itos[index] = piece
    return Vocab(itos)


class MarianTokenizer:
    """Text -> Marian's pieces and ids (source side: :meth:`encode`, :meth:`split`; target side:
    :meth:`encode_target`), ids -> text (:meth:`decode`). Immutable; safe to share between sessions."""

    def __init__(self, source_spm, target_spm, vocab: Vocab, target_vocab: Vocab | None = None) -> None:
        self._source, self._target = source_spm, target_spm
        self.vocab = vocab
        self.target_vocab = target_vocab or vocab
        if EOS not in vocab or EOS not in self.target_vocab:
            raise ValueError(f"{VOCAB_JSON} lacks {EOS}, which ends every text a Marian model reads.")

    @classmethod
    def from_folder(cls, folder: str | Path) -> MarianTokenizer:
        """The tokenizer of a Marian folder (source.spm, target.spm, vocab.json[, target_vocab.json])."""
        folder = Path(folder)
        target_vocab_path = folder / TARGET_VOCAB_JSON
        return cls(
            _read_spm(folder / SOURCE_SPM),
            _read_spm(folder / TARGET_SPM),
            read_vocab_json(folder / VOCAB_JSON),
            read_vocab_json(target_vocab_path) if target_vocab_path.is_file() else None,
        )

    def split(self, text: str) -> list[str]:
        """The source pieces of ``text``, ``</s>`` last: with the model's vocabulary, a
        :class:`~transformer.tokenizer.TextEncoder` maps them to MarianTokenizer's ids."""
        return _pieces(self._source, text) + [EOS]

    def encode(self, text: str) -> MarianPieces:
        """The text to translate, as the encoder reads it."""
        return _looked_up(self.split(text), self.vocab)

    def encode_target(self, text: str) -> MarianPieces:
        """A translation, as the decoder is taught it (after its start token, which is not included)."""
        return _looked_up(_pieces(self._target, text) + [EOS], self.target_vocab)

    def decode(self, ids: list[int]) -> str:
        """Target ids -> text, special tokens (start, ``</s>``, ``<pad>``) left out."""
        pieces = [self.target_vocab.id_to_token(i) for i in ids]
        return self._target.DecodePieces([p for p in pieces if p not in SPECIALS]).replace(WORD_START, " ").strip()


def _pieces(processor, text: str) -> list[str]:
    """SentencePiece pieces of ``text``; a leading language code (``>>kor<<``) stays one piece."""
    code = []
    if text.startswith(">>") and (end := text.find("<<")) != -1:
        code, text = [text[: end + 2]], text[end + 2 :]
    return code + processor.EncodeAsPieces(text)


def _looked_up(pieces: list[str], vocab: Vocab) -> MarianPieces:
    ids = [vocab.token_to_id(p) for p in pieces]
    return MarianPieces(pieces, ids, [i == vocab.unk_id and p != UNK for p, i in zip(pieces, ids, strict=True)])
