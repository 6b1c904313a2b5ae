"""The language model's byte-level BPE tokenizer (Hugging Face ``tokenizers``), learned on both
languages' training reviews and saved as ``tokenizer.json`` in the model folder.

Every byte string can be encoded (no unknown token is ever produced); ``<unk>`` and ``<pad>``
exist only because the bundle's ``vocab.txt`` contract asks for them. ``<|endoftext|>`` separates
documents in training and starts every prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from .tokenizer import PAD, UNK, Vocab

EOT = "<|endoftext|>"
SPECIALS = (UNK, PAD, EOT)
TOKENIZER_FILE = "tokenizer.json"
MAX_TOKENIZER_BYTES = 20 * 1024**2


def train_tokenizer(texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2) -> Tokenizer:
    """A byte-level BPE learned on ``texts``: ids 0, 1, 2 are ``<unk>``, ``<pad>``, ``<|endoftext|>``."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def load_tokenizer(folder: str | Path) -> Tokenizer:
    """``tokenizer.json`` from a model folder; raises FileNotFoundError / ValueError saying what is wrong."""
    path = Path(folder) / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{Path(folder).name} has no {TOKENIZER_FILE}: a language model needs its tokenizer.")
    if path.stat().st_size > MAX_TOKENIZER_BYTES:
        raise ValueError(f"{TOKENIZER_FILE} is {path.stat().st_size:,} bytes; the limit is {MAX_TOKENIZER_BYTES:,}.")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as err:  # tokenizers raises its own Exception subclass for a damaged file
        raise ValueError(f"{TOKENIZER_FILE} could not be read ({err}).") from err


def vocab_of(tok: Tokenizer) -> Vocab:
    """The tokenizer's tokens in id order, as the bundle's ``vocab.txt``."""
    table = tok.get_vocab()
    itos = [""] * len(table)
    for token, index in table.items():
        itos[index] = token
    return Vocab(itos)


def display_token(tok: Tokenizer, index: int) -> str:
    """A token as readable text (its bytes decoded; a leading space kept; bytes of a split
    character shown as �)."""
    return tok.decode([index], skip_special_tokens=False)
