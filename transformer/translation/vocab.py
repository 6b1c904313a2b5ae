"""Source and target vocabularies of a task, and pairs turned into padded id tensors."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..analysis.analyze import pad_ids
from ..core.tokenizer import Vocab
from .pairs import Pair
from .tasks import Task

BOS, EOS = "<bos>", "<eos>"


def build_vocabs(task: Task) -> tuple[Vocab, Vocab]:
    """(source, target): ``<unk>`` 0, ``<pad>`` 1, then (target only) ``<bos>`` 2, ``<eos>`` 3, then
    the task's words in alphabetical order."""
    source = Vocab.from_counts(dict.fromkeys(task.source_words(), 1))
    target = Vocab.from_counts(dict.fromkeys(task.target_words(), 1), specials=[BOS, EOS])
    return source, target


def source_ids(vocab: Vocab, pair: Pair) -> list[int]:
    return [vocab.token_to_id(w) for w in pair.source]


def target_ids(vocab: Vocab, tokens: Sequence[str]) -> list[int]:
    """``<bos>`` + the tokens' ids + ``<eos>``."""
    return [vocab.token_to_id(BOS)] + [vocab.token_to_id(w) for w in tokens] + [vocab.token_to_id(EOS)]


def batch_tensors(pairs: Sequence[Pair], source: Vocab, target: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """(src (B, T_s), tgt (B, T_t + 2) with ``<bos>`` and ``<eos>``), both right-padded with ``<pad>``."""
    src = pad_ids([source_ids(source, p) for p in pairs], source.pad_id)
    tgt = pad_ids([target_ids(target, p.target) for p in pairs], target.pad_id)
    return src, tgt


def alignment_tensor(pairs: Sequence[Pair], length: int) -> torch.Tensor:
    """(B, length) gold source position of the token each decoder row predicts, -1 where none.

    Decoder row j (input token j, ``<bos>`` at 0) predicts target token j, so row j's gold
    position is ``pair.alignment[j]``; rows past the target (``<eos>``, padding) get -1.
    """
    out = torch.full((len(pairs), length), -1, dtype=torch.long)
    for b, pair in enumerate(pairs):
        for j, pos in enumerate(pair.alignment[:length]):
            if pos is not None:
                out[b, j] = pos
    return out
