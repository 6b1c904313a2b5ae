"""The logit lens: every layer's residual stream read through the model's own final norm and output
layer (``readout.chain``), as if the model stopped there.

Row 0 reads the embedding's output, row l the stream after layer l; the last row is the model's
own prediction (the same modules on the same numbers).

Memory is bounded by construction: the readings are computed in chunks of (reading, position) rows
whose vocabulary-wide scratch (logits, probabilities, the rank's comparison) stays within
``CHUNK_BYTES`` whatever the vocabulary, and only the top ``k``, the answer's rank and its
probability are kept from each chunk. Nothing of size readings × positions × vocabulary (nor
positions × vocabulary beyond one chunk) is ever allocated; the streams themselves are
(L + 1) × T × D.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .readout import chain, readout
from .stream import trace

TOP = 5
MB = 1_000_000
# Scratch one chunk of the lens may hold (float32 logits and probabilities, topk's scratch: ~10 bytes
# per vocabulary entry and row); ATTENTION_LAB_LENS_CHUNK_MB changes it.
CHUNK_BYTES = int(float(os.environ.get("ATTENTION_LAB_LENS_CHUNK_MB", 48)) * MB)
BYTES_PER_ENTRY = 10  # logits (4) + probabilities (4) + topk's own scratch


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


def chunk_rows(vocab_size: int, budget: int = CHUNK_BYTES) -> int:
    """Rows (reading, position pairs) read at once so that their vocabulary-wide scratch fits ``budget``
    (at least one row): 48 MB gives ~98 rows of 49,152 tokens, ~18 of 262,144."""
    return max(1, budget // (BYTES_PER_ENTRY * max(1, vocab_size)))


@torch.no_grad()
def logit_lens(
    model: nn.Module,
    ids: torch.Tensor,
    target: torch.Tensor | None = None,
    top: int = TOP,
    positions: Sequence[int] | None = None,
    budget: int = CHUNK_BYTES,
) -> Lens:
    """ids (1, T) (an encoder-decoder's source, ``target`` (1, T_t) its decoder input, read at the
    target's positions) -> the lens; ``positions``: only these (in this order; default every position),
    the lens's T then being their number. ValueError for a model without an output vocabulary."""
    steps = chain(model)
    streams = trace(model, ids, target, weights=False).streams  # L + 1 tensors (T, D)
    if positions is not None:
        pick = torch.as_tensor(list(positions), dtype=torch.long, device=streams[0].device)
        streams = [s.index_select(0, pick) for s in streams]
    rows = torch.stack(streams).flatten(0, 1)  # ((L + 1) T, D): reading r, position p at r T + p
    readings, length = len(streams), streams[0].shape[0]
    final = rows[(readings - 1) * length :]
    vocab = readout(steps, final[:1]).shape[-1]
    scratch = _Scratch(min(chunk_rows(vocab, budget), rows.shape[0]), vocab, rows.device)
    n = scratch.rows
    answer = torch.cat([scratch.probabilities(steps, final[s : s + n]).argmax(-1) for s in range(0, length, n)])
    k = min(top, vocab)
    out = [scratch.read(steps, rows[s : s + n], answer, s, length, k) for s in range(0, rows.shape[0], n)]
    top_ids, top_probs, rank, prob = (torch.cat(parts).reshape(readings, length, -1) for parts in zip(*out))
    return Lens(
        top_ids.cpu().numpy(),
        top_probs.cpu().numpy(),
        answer.cpu().numpy(),
        rank[..., 0].cpu().numpy(),
        prob[..., 0].cpu().numpy(),
    )


class _Scratch:
    """The vocabulary-wide buffers of one lens, allocated once and reused by every chunk: the
    chunks' own (n, V) temporaries, freed and allocated again, fragment the C heap and can keep
    gigabytes resident (measured: 2.7 GB after 96 chunks of a 2,000,000-token vocabulary)."""

    def __init__(self, rows: int, vocab: int, device: torch.device) -> None:
        self.rows = rows
        self.logits = torch.empty(rows, vocab, device=device)
        self.probs = torch.empty(rows, vocab, device=device)

    def probabilities(self, steps, rows: torch.Tensor) -> torch.Tensor:
        """rows (n, D) -> (n, V) softmax of the readout's logits in float32, in the buffers."""
        n, last = rows.shape[0], steps[-1].fn
        x = readout(steps[:-1], rows)
        if isinstance(last, nn.Linear) and last.weight.dtype == torch.float32 and x.dtype == torch.float32:
            logits = self.logits[:n]
            if last.bias is None:
                torch.mm(x, last.weight.t(), out=logits)
            else:
                torch.addmm(last.bias, x, last.weight.t(), out=logits)
        else:  # half precision weights: the readout's own result, then in float32
            logits = readout(steps[-1:], x).float()
        return torch.ops.aten._softmax.out(logits, -1, False, out=self.probs[:n])

    def read(self, steps, rows: torch.Tensor, answer: torch.Tensor, start: int, length: int, k: int):
        """rows (n, D), the chunk starting at flat row ``start`` -> top ids and probabilities (n, k), the
        answer's rank and probability (n, 1)."""
        probs = self.probabilities(steps, rows)
        best = probs.topk(k, dim=-1)
        mine = answer[(torch.arange(rows.shape[0], device=rows.device) + start) % length]  # (n,)
        answer_prob = probs.gather(-1, mine[:, None])  # (n, 1)
        # tokens strictly likelier than the answer, as 0/1 in the logits' buffer (no longer needed) and
        # counted in float32, exact below 2^24 tokens: a boolean's sum makes an int64 copy of the chunk
        above = torch.gt(probs, answer_prob, out=self.logits[: rows.shape[0]])
        return best.indices, best.values, above.sum(-1, keepdim=True).long(), answer_prob
