"""The logit lens: every layer's residual stream read through the model's own final norm and output
layer (``readout.chain``), as if the model stopped there.

Row 0 reads the embedding's output, row l the stream after layer l; the last row is the model's
own prediction (the same modules on the same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .readout import chain, readout
from .stream import trace

TOP = 5


@dataclass(frozen=True)
class Lens:
    """For L + 1 readings (embedding, then each layer) and T positions: ``top_ids`` / ``top_probs``
    (L + 1, T, k) the k likeliest tokens, most likely first; ``answer`` (T,) the model's own top token;
    ``answer_rank`` (L + 1, T) its rank at each reading (0 = top) and ``answer_prob`` its probability."""

    top_ids: np.ndarray
    top_probs: np.ndarray
    answer: np.ndarray
    answer_rank: np.ndarray
    answer_prob: np.ndarray

    @property
    def layers(self) -> int:
        """Readings after a layer (the embedding's reading not counted)."""
        return self.top_ids.shape[0] - 1


@torch.no_grad()
def logit_lens(model: nn.Module, ids: torch.Tensor, target: torch.Tensor | None = None, top: int = TOP) -> Lens:
    """ids (1, T) (an encoder-decoder's source, ``target`` (1, T_t) its decoder input, read at the
    target's positions) -> the lens; ValueError for a model without an output vocabulary."""
    steps = chain(model)
    streams = torch.stack(trace(model, ids, target).streams)  # (L + 1, T, D)
    probs = torch.softmax(readout(steps, streams).float(), dim=-1)  # (L + 1, T, V)
    best = probs.topk(min(top, probs.shape[-1]), dim=-1)
    answer = probs[-1].argmax(-1)  # (T,)
    answer_prob = probs.gather(-1, answer.expand(probs.shape[0], -1)[..., None])  # (L + 1, T, 1)
    rank = (probs > answer_prob).sum(-1)  # tokens strictly likelier than the answer
    return Lens(
        best.indices.cpu().numpy(),
        best.values.cpu().numpy(),
        answer.cpu().numpy(),
        rank.cpu().numpy(),
        answer_prob[..., 0].cpu().numpy(),
    )
