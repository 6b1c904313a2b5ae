"""Scores of a translation model on held-out pairs: exact match of greedy decoding and
per-layer per-head alignment accuracy of cross-attention (teacher-forced)."""

from __future__ import annotations

import torch

from ..model import EncoderDecoder
from ..tokenizer import Vocab
from .alignment import head_accuracy
from .decode import greedy_batch
from .tasks import Task
from .vocab import alignment_tensor, batch_tensors


def strip(ids: list[int], eos_id: int, pad_id: int) -> list[int]:
    """Ids after ``<bos>`` up to (without) the first ``<eos>``."""
    out = []
    for i in ids[1:]:
        if i in (eos_id, pad_id):
            break
        out.append(i)
    return out


@torch.no_grad()
def evaluate(
    model: EncoderDecoder, task: Task, vocabs: tuple[Vocab, Vocab], n: int, seed: int, batch: int = 250
) -> dict:
    """{"test_pairs", "exact_match", "alignment_accuracy" [layer][head], "alignment_tokens", "best_head"}."""
    pairs = task.generate(n, seed, "test")
    cfg = model.config
    exact, crosses, golds = 0, [], []
    for i in range(0, n, batch):
        chunk = pairs[i : i + batch]
        src, tgt = batch_tensors(chunk, *vocabs)
        out_ids = greedy_batch(model, src, tgt.shape[1] + 4).tolist()
        exact += sum(strip(o, cfg.eos_id, cfg.target_pad_id) == t[1 : len(p.target) + 1]
                     for o, t, p in zip(out_ids, tgt.tolist(), chunk))  # fmt: skip
        cross = model(src, tgt[:, :-1], need_weights=True).cross  # L x (B, H, T_t, T_s)
        acc, count = head_accuracy(
            torch.stack([c.weights for c in cross], 1), alignment_tensor(chunk, tgt.shape[1] - 1)
        )
        crosses.append(acc * count)
        golds.append(count)
    per_head = sum(crosses) / sum(golds)  # (L, H)
    layer, head = divmod(int(per_head.argmax()), per_head.shape[1])
    return {
        "test_pairs": n,
        "exact_match": exact / n,
        "alignment_accuracy": [[round(float(a), 4) for a in row] for row in per_head],
        "alignment_tokens": int(sum(golds)),
        "best_head": {"layer": layer, "head": head, "accuracy": round(float(per_head[layer, head]), 4)},
    }
