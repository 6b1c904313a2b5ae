"""Word-level tokenisation with torchtext's ``basic_english`` rules, the vocabulary, and the
encoder that turns text into ids for a model.

``basic_english`` gives the tokens of ``torchtext.data.get_tokenizer("basic_english")`` (the same
replacements in the same order, then a whitespace split), built on the maintained Hugging Face
``tokenizers`` library, so a model trained in a torchtext notebook sees the same ids here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

UNK, PAD, CLS, MASK = "<unk>", "<pad>", "<cls>", "<mask>"
VOCAB_FILE = "vocab.txt"

# torchtext's regexes, in torchtext's order; every pattern is a literal string. The order matters: removing '"' first can
# turn '<br "/>' into '<br />', which is then replaced, as in torchtext. torchtext's last rule
# (whitespace runs -> one space) is left out: the whitespace split makes it a no-op.
_RULES: tuple[tuple[str, str], ...] = (
    ("'", " '  "),
    ('"', ""),
    (".", " . "),
    ("<br />", " "),
    (",", " , "),
    ("(", " ( "),
    (")", " ) "),
    ("!", " ! "),
    ("?", " ? "),
    (";", " "),
    (":", " "),
)


def _build_pipeline():
    """The Hugging Face normalizer (lower-case + the replacements) and pre-tokenizer (split on whitespace)."""
    from tokenizers import Regex, normalizers, pre_tokenizers

    steps = [normalizers.Lowercase()] + [normalizers.Replace(old, new) for old, new in _RULES]
    # Python's str.split (torchtext's last step) also splits at U+001C..U+001F; Rust's does not.
    steps.append(normalizers.Replace(Regex("[\x1c-\x1f]"), " "))
    return normalizers.Sequence(steps), pre_tokenizers.WhitespaceSplit()


_NORMALIZER, _PRE_TOKENIZER = _build_pipeline()


def basic_english(text: str) -> list[str]:
    """Lower-case ``text``, space out punctuation, drop quotes and ``<br />``, split on whitespace.

    Same output as torchtext's ``basic_english``: "Don't!" -> ["don", "'", "t", "!"], built on
    Hugging Face ``tokenizers``. One known difference: its lower-casing works a character at a
    time, so a Greek final sigma stays "σ" where Python's ``str.lower`` gives "ς".
    Empty or whitespace-only text gives [].
    """
    return [word for word, _ in _PRE_TOKENIZER.pre_tokenize_str(_NORMALIZER.normalize_str(text))]


_DIGIT_PARTS = re.compile(r"\d|[^\W\d_]+|[^\w\s]|_")
NUMBER_GAP = "␣"  # between two numbers written side by side: "3 2021" is not "32021"


def basic_english_digits(text: str) -> list[str]:
    """``basic_english``, then every word cut into single digits, runs of letters and single
    symbols, so numbers are read digit by digit instead of as one (often unknown) word:
    "2021-03-03" -> ["2", "0", "2", "1", "-", "0", "3", "-", "0", "3"], "9th" -> ["9", "th"].
    Two numbers separated only by spaces keep a ``NUMBER_GAP`` token between them:
    "march 3 2021" -> ["march", "3", "␣", "2", "0", "2", "1"]."""
    out: list[str] = []
    for word in basic_english(text):
        parts = _DIGIT_PARTS.findall(word)
        if out and parts and out[-1].isdigit() and parts[0].isdigit():
            out.append(NUMBER_GAP)
        out.extend(parts)
    return out


class Vocab:
    """Token <-> id mapping. Must hold ``<unk>`` (what unknown words map to) and ``<pad>``.

    Vocabularies built here put ``<unk>`` at 0, ``<pad>`` at 1, then extra specials, then words
    by frequency; loaded ones may have them anywhere. Immutable once made.
    """

    def __init__(self, itos: Sequence[str]) -> None:
        itos = list(itos)
        _check_itos(itos)
        self._itos = itos
        self._stoi = {tok: i for i, tok in enumerate(itos)}
        self._unk_id = self._stoi[UNK]
        self._pad_id = self._stoi[PAD]

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        token_lists: Iterable[Iterable[str]],
        min_freq: int = 1,
        max_size: int | None = None,
        specials: Sequence[str] = (),
    ) -> Vocab:
        """Vocabulary of the words in ``token_lists`` seen at least ``min_freq`` times.

        Order: ``<unk>``, ``<pad>``, ``specials`` (e.g. ["<cls>"]), then words, most frequent
        first, ties alphabetical (so the result does not depend on input order). ``max_size``
        caps the total size, specials included.
        """
        counts: Counter[str] = Counter()
        for tokens in token_lists:
            counts.update(tokens)
        return cls.from_counts(counts, min_freq, max_size, specials)

    @classmethod
    def from_counts(
        cls, counts: Mapping[str, int], min_freq: int = 1, max_size: int | None = None, specials: Sequence[str] = ()
    ) -> Vocab:
        """Like :meth:`build`, from word counts already made."""
        head = [UNK, PAD] + [s for s in specials if s not in (UNK, PAD)]
        if len(set(head)) != len(head):
            raise ValueError(f"specials has duplicates: {list(specials)}.")
        if min_freq < 1:
            raise ValueError(f"min_freq must be at least 1, not {min_freq}.")
        if max_size is not None and max_size < len(head):
            raise ValueError(f"max_size ({max_size}) must leave room for the specials {head}.")
        reserved = set(head)
        words = sorted(
            (w for w, n in counts.items() if n >= min_freq and w not in reserved), key=lambda w: (-counts[w], w)
        )
        if max_size is not None:
            words = words[: max_size - len(head)]
        return cls(head + words)

    @classmethod
    def from_itos(cls, itos: Sequence[str]) -> Vocab:
        """The vocabulary whose token for id ``i`` is ``itos[i]`` (e.g. torchtext's
        ``vocab.get_itos()``). Raises ValueError when it is empty, has duplicates, or lacks
        ``<unk>`` or ``<pad>``."""
        return cls(itos)

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        """Read ``vocab.txt`` (one token per line, line number = id; a folder holding one is
        also accepted), or a ``.json`` file with a list of tokens or a {token: id} object."""
        path = Path(path)
        if path.is_dir():
            path = path / VOCAB_FILE
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix.lower() == ".json":
            return cls(_itos_from_json(json.loads(text), path))
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        # Tolerate a file saved with Windows line endings: a token never contains "\r".
        return cls([line.removesuffix("\r") for line in lines])

    def save(self, path: str | Path) -> Path:
        """Write one token per line (line number = id) to ``path``, or to ``path/vocab.txt``
        when ``path`` is a folder. Returns the file written."""
        path = Path(path)
        if path.is_dir():
            path = path / VOCAB_FILE
        bad = [i for i, tok in enumerate(self._itos) if "\n" in tok or "\r" in tok]
        if bad:
            raise ValueError(
                f"Tokens with ids {bad[:5]} contain a line break, which vocab.txt "
                "cannot hold; save the vocabulary as a JSON list instead."
            )
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(tok + "\n" for tok in self._itos))
        return path

    # ---- lookup ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._itos == other._itos

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, unk_id={self._unk_id}, pad_id={self._pad_id})"

    @property
    def unk_id(self) -> int:
        return self._unk_id

    @property
    def pad_id(self) -> int:
        return self._pad_id

    @property
    def itos(self) -> list[str]:
        """All tokens, index = id (a copy; use :meth:`id_to_token` for single lookups)."""
        return list(self._itos)

    @property
    def stoi(self) -> dict[str, int]:
        """{token: id} (a copy)."""
        return dict(self._stoi)

    def token_to_id(self, token: str) -> int:
        """The token's id, or ``unk_id`` when it is not in the vocabulary."""
        return self._stoi.get(token, self._unk_id)

    def id_to_token(self, index: int) -> str:
        """The token with id ``index``; IndexError outside ``0 .. len - 1``."""
        if not 0 <= index < len(self._itos):
            raise IndexError(f"Token id {index} is outside the vocabulary (0 .. {len(self) - 1}).")
        return self._itos[index]


def _check_itos(itos: list) -> None:
    """Raise ValueError, saying how to fix it, when ``itos`` cannot be a vocabulary."""
    if not itos:
        raise ValueError("The vocabulary is empty: it needs at least '<unk>' and '<pad>'.")
    not_str = [i for i, tok in enumerate(itos) if not isinstance(tok, str)]
    if not_str:
        raise ValueError(f"Vocabulary entries must be strings; ids {not_str[:5]} are not.")
    seen: dict[str, int] = {}
    duplicates = []
    for i, tok in enumerate(itos):
        if tok in seen:
            duplicates.append(f"{tok!r} (ids {seen[tok]} and {i})")
        seen.setdefault(tok, i)
    if duplicates:
        raise ValueError(
            f"The vocabulary has duplicate tokens: {', '.join(duplicates[:5])}; "
            "each token must appear once, on the line of its id."
        )
    missing = [tok for tok in (UNK, PAD) if tok not in seen]
    if missing:
        raise ValueError(
            f"The vocabulary lacks {' and '.join(missing)}: unknown words map to "
            f"'{UNK}' and padding uses '{PAD}'. If yours use other names, rename "
            "them in the file (keeping their line, i.e. their id)."
        )


def _itos_from_json(data: object, path: Path) -> list:
    """A token list from a JSON list, or from a {token: id} object with ids 0 .. n-1."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        ids = list(data.values())
        if not all(type(i) is int for i in ids) or sorted(ids) != list(range(len(ids))):
            raise ValueError(f"{path}: a {{token: id}} vocabulary needs the ids 0 .. {len(data) - 1}, each once.")
        itos = [""] * len(data)
        for tok, i in data.items():
            itos[i] = tok
        return itos
    raise ValueError(f"{path}: expected a JSON list of tokens or a {{token: id}} object.")


@dataclass(frozen=True)
class Encoded:
    """One text, tokenised and mapped to ids; the lists are aligned, one entry per token."""

    tokens: list[str]  # words as the tokenizer made them; "<cls>" first when added
    ids: list[int]
    unknown: list[bool]  # True where the word mapped to <unk>
    truncated: bool  # whether tokens were cut off at max_len
    original_length: int  # number of tokens before truncation, "<cls>" included


class TextEncoder:
    """A splitter (``basic_english`` words, or a model's subword pieces) + a :class:`Vocab`: text -> :class:`Encoded`."""

    def __init__(self, vocab: Vocab, cls_token: str = CLS, split: Callable[[str], list[str]] | None = None) -> None:
        self.vocab = vocab
        self.cls_token = cls_token
        self._split = split or basic_english
        self._stoi = vocab.stoi  # one private copy, read on every lookup
        self._unk_id = vocab.unk_id
        self._specials = {PAD, CLS, MASK, cls_token} - {UNK}

    def encode(self, text: str, max_len: int | None = None, add_cls: bool = False) -> Encoded:
        """Tokens and ids of ``text``, keeping the first ``max_len`` tokens (``<cls>`` counts).

        Text with no words gives empty lists (and just ``<cls>`` with ``add_cls``).
        """
        return self.encode_batch([text], max_len, add_cls)[0]

    def encode_batch(self, texts: Iterable[str], max_len: int | None = None, add_cls: bool = False) -> list[Encoded]:
        """:meth:`encode` for each text; 2-5 s for the 25,000 IMDB training reviews on 2 cores."""
        if max_len is not None and max_len < 1:
            raise ValueError(f"max_len must be at least 1, not {max_len}.")
        if add_cls and self.cls_token not in self.vocab:
            raise ValueError(
                f"add_cls needs {self.cls_token!r} in the vocabulary, which lacks it; "
                f"build it with specials=[{self.cls_token!r}]."
            )
        out = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"Input {index} is a {type(text).__name__}, not a str.")
            out.append(self._encode_tokens(self._split(text), max_len, add_cls))
        return out

    def _encode_tokens(self, words: list[str], max_len: int | None, add_cls: bool) -> Encoded:
        get, unk = self._stoi.get, self._unk_id
        # a special token typed in the text is an unknown word: user text cannot inject <pad> or <cls>
        ids = [unk if word in self._specials else get(word, unk) for word in words]
        unknown = [i == unk for i in ids]
        if add_cls:
            words, ids, unknown = [self.cls_token] + words, [self._stoi[self.cls_token]] + ids, [False] + unknown
        original_length = len(words)
        truncated = max_len is not None and original_length > max_len
        if truncated:
            words, ids, unknown = words[:max_len], ids[:max_len], unknown[:max_len]
        return Encoded(words, ids, unknown, truncated, original_length)


def to_hf_tokenizer(vocab: Vocab):
    """The same rules and vocabulary as a Hugging Face ``tokenizers.Tokenizer`` (WordLevel),
    for use outside this package, e.g. ``to_hf_tokenizer(v).save("tokenizer.json")``."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    tokenizer = Tokenizer(WordLevel(vocab.stoi, unk_token=vocab.id_to_token(vocab.unk_id)))
    tokenizer.normalizer, tokenizer.pre_tokenizer = _build_pipeline()
    return tokenizer
