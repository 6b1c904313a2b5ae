"""The induction probe: random token spans repeated once, and each head's induction score on them."""

from __future__ import annotations

import numpy as np
import torch

from ..analysis.head_roles import induction_score

PROBE_PERIOD = 40
PROBE_BATCH = 16


def repeated_random_tokens(
    batch: int, period: int, end_id: int, first_id: int, start_id: int, seed: int = 0
) -> torch.Tensor:
    """(batch, 1 + 2*period) ids: ``start_id`` then a span of uniform random ids in
    [first_id, end_id) and the same span again."""
    gen = torch.Generator().manual_seed(seed)
    span = torch.randint(first_id, end_id, (batch, period), generator=gen)
    start = torch.full((batch, 1), start_id, dtype=torch.long)
    return torch.cat([start, span, span], dim=1)


@torch.no_grad()
def head_induction_scores(
    model,
    period: int = PROBE_PERIOD,
    batch: int = PROBE_BATCH,
    seed: int = 0,
    first_id: int = 3,
    end_id: int | None = None,
) -> np.ndarray:
    """(layers, heads) induction score of every head, averaged over ``batch`` probe sequences of
    random ids in [first_id, end_id) (default: every non-special id)."""
    config = model.config
    period = min(period, (config.max_len - 1) // 2)
    end = config.vocab_size if end_id is None else min(end_id, config.vocab_size)
    ids = repeated_random_tokens(batch, period, end, first_id, config.bos_id, seed)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = model(ids.to(device), need_weights=True)
    model.train(was_training)
    weights = np.stack([w.weights.float().cpu().numpy() for w in out.attention])  # (L, B, H, T, T)
    return induction_score(weights, period, start=1).mean(axis=1)  # (L, H)


def probe_range(metrics: dict | None, vocab_size: int) -> tuple[int, int]:
    """The [first, end) ids a bundled model's induction probe drew from (metrics.json), else all non-special ids."""
    ids = ((metrics or {}).get("induction") or {}).get("probe_ids")
    if isinstance(ids, list) and len(ids) == 2 and all(isinstance(i, int) for i in ids):
        return ids[0], min(ids[1], vocab_size)
    return 3, vocab_size
