"""Subword pieces: a WordPiece tokenizer learned with Hugging Face ``tokenizers`` and saved as
``tokenizer.json`` beside a model, for languages where whole words are too many to list (Korean
words carry their particles and endings: 영화는, 영화를, 영화가 are three words but one stem).

A :class:`PieceSplitter` turns text into the pieces a model sees ("영화", "##는"); the
:class:`~transformer.tokenizer.TextEncoder` maps them to ids with the model's ``vocab.txt``, which
holds the same pieces in the same order. A character the tokenizer has never seen comes back as
itself (not as ``<unk>``) so the page can show which character it was; its id is ``<unk>``'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from .tokenizer import PAD, UNK

TOKENIZER_FILE = "tokenizer.json"
CONTINUATION = "##"  # WordPiece's mark on a piece that continues the word before it
MAX_TOKENIZER_BYTES = 64 * 1024**2  # a 30,000-piece tokenizer.json is about 1 MB


def _pipeline():
    """Normaliser and pre-tokeniser: Unicode NFC (a syllable stored as decomposed jamo, as macOS
    file names are, becomes one syllable block; NFKC is not used because it turns the jamo of ㅋㅋ and ㅠㅠ into their conjoining
    forms, which display as broken letters), lower case, then split at spaces and around punctuation."""
    from tokenizers import normalizers, pre_tokenizers

    normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    return normalizer, pre_tokenizers.BertPreTokenizer()


def train_wordpiece(texts: Iterable[str], vocab_size: int, min_frequency: int = 2, specials: tuple[str, ...] = ()):
    """A WordPiece ``tokenizers.Tokenizer`` learned on ``texts``, with ``<unk>`` at id 0, ``<pad>`` at 1,
    then ``specials``, then the pieces; ``vocab_size`` counts them all."""
    from tokenizers import Tokenizer, models, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token=UNK, continuing_subword_prefix=CONTINUATION))
    tokenizer.normalizer, tokenizer.pre_tokenizer = _pipeline()
    head = [UNK, PAD] + [s for s in specials if s not in (UNK, PAD)]
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=head,
        continuing_subword_prefix=CONTINUATION,
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


class PieceSplitter:
    """Text -> the WordPiece pieces of a saved ``tokenizer.json`` (``split``), for a TextEncoder.

    Immutable after construction and safe to share between sessions (``tokenizers`` encodes
    without keeping state between calls)."""

    def __init__(self, tokenizer) -> None:
        self._tokenizer = tokenizer
        self._unk = UNK
        self.vocabulary = _ordered_vocabulary(tokenizer)

    @classmethod
    def load(cls, path: str | Path) -> PieceSplitter:
        """Read ``tokenizer.json`` (or a folder holding one); raises ValueError naming the file when
        it is too large, not JSON, or not a WordPiece tokenizer with ``<unk>`` and ``<pad>``."""
        path = Path(path)
        if path.is_dir():
            path = path / TOKENIZER_FILE
        size = path.stat().st_size
        if size > MAX_TOKENIZER_BYTES:
            raise ValueError(f"{path.name} is {size:,} bytes; a tokenizer is a few MB at most.")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"{path.name} is not UTF-8 text.") from err
        return cls.from_json(text, path.name)

    @classmethod
    def from_json(cls, text: str, name: str = TOKENIZER_FILE) -> PieceSplitter:
        """A splitter from the text of a ``tokenizer.json`` (checked as :meth:`load` does)."""
        from tokenizers import Tokenizer

        if len(text) > MAX_TOKENIZER_BYTES:
            raise ValueError(f"{name} is {len(text):,} characters; a tokenizer is a few MB at most.")
        try:
            model = json.loads(text).get("model", {})
        except (RecursionError, json.JSONDecodeError, AttributeError) as err:
            raise ValueError(f"{name} is not valid JSON ({type(err).__name__}).") from err
        if not isinstance(model, dict) or model.get("type") != "WordPiece":
            raise ValueError(f"{name} is not a WordPiece tokenizer; save one made by train_wordpiece.")
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as err:  # tokenizers raises its own Exception subclass for a bad file
            raise ValueError(f"{name} could not be read as a tokenizer ({err}).") from err
        missing = [t for t in (UNK, PAD) if t not in tokenizer.get_vocab()]
        if missing:
            raise ValueError(f"{name} lacks {' and '.join(missing)}.")
        return cls(tokenizer)

    def to_json(self) -> str:
        """The text of ``tokenizer.json``."""
        return self._tokenizer.to_str()

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / TOKENIZER_FILE
        self._tokenizer.save(str(path))
        return path

    def split(self, text: str) -> list[str]:
        """The pieces of ``text``; an unknown piece is the original text it covers."""
        return list(self._pieces(text))

    def _pieces(self, text: str) -> Iterator[str]:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        for token, (start, end) in zip(encoding.tokens, encoding.offsets):
            # offsets point into the original text: an unknown piece shows what the model could not read
            yield token if token != self._unk else (text[start:end] or token)


def _ordered_vocabulary(tokenizer) -> list[str]:
    """The tokenizer's pieces in id order (what ``vocab.txt`` holds)."""
    vocab = tokenizer.get_vocab()
    itos = [""] * len(vocab)
    for piece, index in vocab.items():
        itos[index] = piece
    return itos


def syllables(text: str) -> list[str]:
    """The characters of ``text`` (NFKC, lower case) without spaces: the simplest Korean tokenisation,
    one syllable block per token."""
    normalizer, _ = _pipeline()
    return [ch for ch in normalizer.normalize_str(text) if not ch.isspace()]
