"""Vocabularies for imported checkpoints: a file (vocab.txt or a JSON list) or a list stored in
the checkpoint. A torchtext user exports theirs with ``vocab.get_itos()``."""

from __future__ import annotations

from pathlib import Path

from ..core.tokenizer import Vocab
from .errors import CheckpointError
from .safe_load import MAX_VOCAB, check_file_size

MAX_VOCAB_FILE_MB = 64
BOS_TOKENS = ("<bos>", "<sos>", "<s>", "[BOS]", "<start>")
EOS_TOKENS = ("<eos>", "</s>", "[EOS]", "<end>")


def read_vocab_file(path: str | Path) -> Vocab:
    """``vocab.txt`` (one token per line, line number = id) or a ``.json`` list / {token: id}."""
    path = Path(path)
    check_file_size(path, MAX_VOCAB_FILE_MB)
    try:
        vocab = Vocab.load(path)
    except UnicodeDecodeError as err:
        raise CheckpointError(
            f"{path.name} is not UTF-8 text: a vocabulary is a text file, one token per line."
        ) from err
    except ValueError as err:  # also JSON errors; Vocab explains what is missing (e.g. <unk>, <pad>)
        raise CheckpointError(f"{path.name}: {err}") from err
    except RecursionError as err:
        raise CheckpointError(
            f"{path.name} is nested too deeply to read: a JSON vocabulary is one flat list of tokens."
        ) from err
    except (TypeError, AttributeError) as err:
        raise CheckpointError(
            f"{path.name} is not a list of tokens (or a {{token: id}} object): {type(err).__name__}."
        ) from err
    check_vocab_size(len(vocab), path.name)
    return vocab


def vocab_from_list(itos: list[str], where: str) -> Vocab:
    try:
        return Vocab.from_itos(itos)
    except ValueError as err:
        raise CheckpointError(f"The vocabulary stored in {where}: {err}") from err


def check_vocab_size(size: int, where: str) -> None:
    if size > MAX_VOCAB:
        raise CheckpointError(f"{where} has {size:,} tokens; the limit is {MAX_VOCAB:,}.")


def check_fits(vocab: Vocab, rows: int, side: str) -> str | None:
    """Raise when ids from ``vocab`` would fall outside an embedding with ``rows`` rows; a note
    when the vocabulary is smaller than the embedding (unused rows are harmless)."""
    if len(vocab) > rows:
        raise CheckpointError(
            f"The {side} vocabulary has {len(vocab):,} tokens but the checkpoint's {side} embedding has {rows:,} rows: "
            "upload the vocabulary this model was trained with."
        )
    if len(vocab) < rows:
        return (
            f"The {side} vocabulary has {len(vocab):,} tokens for {rows:,} embedding rows; the extra rows are unused."
        )
    return None


def special_id(vocab: Vocab, candidates: tuple[str, ...]) -> int | None:
    """The id of the first of ``candidates`` that ``vocab`` holds, else None."""
    for token in candidates:
        if token in vocab:
            return vocab.token_to_id(token)
    return None
