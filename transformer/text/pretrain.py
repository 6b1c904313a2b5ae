"""Masked-language-model pre-training of the encoder on unlabelled review text.

BERT's recipe (Devlin et al., 2019) at this project's scale: each step hides 15 % of the real
tokens — 80 % of them become ``<mask>``, 10 % a random word, 10 % stay as they are — and the
encoder learns to name the hidden words from their neighbours. That teaches attention to read
context ("not" next to "good") before the classifier sees a single label. The prediction head
is thrown away afterwards; only the encoder's weights carry over to the classifier.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from ..analysis.analyze import pad_ids
from ..core.model import Encoder
from ..core.tokenizer import MASK

__all__ = ["MASK", "MaskedLMHead", "mask_tokens", "mlm_loss", "pretrain_epoch"]
IGNORE = -100  # cross_entropy's ignore_index: positions that were not hidden


def mask_tokens(
    ids: torch.Tensor,
    mask_id: int,
    pad_id: int,
    first_word_id: int,
    vocab_size: int,
    rate: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """ids (B, T) -> (inputs (B, T), targets (B, T)).

    ``targets`` holds the original id where a token was chosen for prediction and ``IGNORE``
    elsewhere; ``<pad>`` is never chosen. Random replacements are drawn from the words
    (ids ``first_word_id`` .. ``vocab_size - 1``), never from the special tokens.
    """
    real = ids != pad_id
    draw = torch.rand(ids.shape, generator=generator, device=ids.device)
    chosen = (draw < rate) & real
    targets = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    how = torch.rand(ids.shape, generator=generator, device=ids.device)
    to_mask = chosen & (how < 0.8)
    to_random = chosen & (how >= 0.8) & (how < 0.9)
    random_words = torch.randint(first_word_id, vocab_size, ids.shape, generator=generator, device=ids.device)
    inputs = ids.masked_fill(to_mask, mask_id)
    inputs = torch.where(to_random, random_words, inputs)
    return inputs, targets


class MaskedLMHead(nn.Module):
    """hidden (N, D) -> logits (N, V): dense + GELU + LayerNorm, then the token-embedding table
    (tied, as in BERT) plus a bias."""

    def __init__(self, embedding: nn.Embedding) -> None:
        super().__init__()
        vocab_size, d_model = embedding.weight.shape
        self.transform = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model))
        self.embedding = embedding
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(self.transform(hidden), self.embedding.weight, self.bias)


def mlm_loss(encoder: Encoder, head: MaskedLMHead, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the hidden positions only (the head runs on those rows alone)."""
    hidden = encoder(inputs).hidden  # (B, T, D)
    chosen = targets != IGNORE  # (B, T)
    if not chosen.any():
        return hidden.sum() * 0.0
    return F.cross_entropy(head(hidden[chosen]), targets[chosen])


def pretrain_epoch(
    encoder: Encoder,
    head: MaskedLMHead,
    batches: list[list[int]],
    seqs: list[list[int]],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    mask_id: int,
    first_word_id: int,
    rate: float,
    device: torch.device,
    epoch: int,
) -> float:
    """One masked-LM pass over ``batches`` (lists of indices into ``seqs``); returns the mean loss."""
    encoder.train()
    head.train()
    pad_id, vocab_size = encoder.pad_id, head.bias.numel()
    total, count, tokens, start = 0.0, 0, 0, time.perf_counter()
    bar = tqdm(batches, desc=f"pre-train {epoch}", unit="batch", leave=False, mininterval=10.0)
    for batch in bar:
        ids = pad_ids([seqs[i] for i in batch], pad_id).to(device)
        inputs, targets = mask_tokens(ids, mask_id, pad_id, first_word_id, vocab_size, rate)
        loss = mlm_loss(encoder, head, inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], 1.0)
        optimizer.step()
        scheduler.step()
        total += loss.item()
        count += 1
        tokens += int((ids != pad_id).sum())
        rate_s = tokens / (time.perf_counter() - start)
        bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{rate_s:,.0f}", refresh=False)
    return total / max(1, count)
