"""Generation, one token at a time, with or without the key/value cache, recording at each step
what the Generate page shows: the distribution, the chosen token, and the attention row of the
token that made the prediction, per layer and head.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.decoder import DecoderLM
from .cache import KVCache, forward_cached
from .sampling import Sampling, choose, filtered_probabilities

MAX_STEPS = 512  # no call generates more than this, whatever is asked (the context is the real bound)


@dataclass(frozen=True)
class Step:
    """One generated token. probs: (V,) the model's softmax; filtered: (V,) what was drawn from;
    attention: (L, H, T) the attention row of the last prefix token (the query that predicted
    this token) over the T prefix tokens; forced: True when the token was given, not chosen."""

    position: int
    token_id: int
    probs: np.ndarray
    filtered: np.ndarray
    attention: np.ndarray
    forced: bool


@dataclass(frozen=True)
class Generation:
    """ids: prompt + generated ids; steps: one record per generated token; stopped: why it ended
    ("steps": as many as asked; "context": the model's context filled; "limit": MAX_STEPS reached;
    "end": the ``stop_at`` token was produced)."""

    ids: list[int]
    prompt_length: int
    steps: list[Step]
    stopped: str


def _check_prompt(model: DecoderLM, ids: list[int]) -> None:
    if not ids:
        raise ValueError("The prompt is empty: give at least one token.")
    if len(ids) > model.config.max_len:
        raise ValueError(
            f"The prompt has {len(ids)} tokens; this model reads at most {model.config.max_len}. Shorten it."
        )


@torch.no_grad()
def generate(
    model: DecoderLM,
    ids: list[int],
    steps: int,
    sampling: Sampling = Sampling(),
    forced: dict[int, int] | None = None,
    head_mask: torch.Tensor | None = None,
    use_cache: bool = True,
    stop_at: int | None = None,
) -> Generation:
    """Continue ``ids`` by up to ``steps`` tokens (bounded by MAX_STEPS and the context).

    forced: {step index: token id} puts that token at that step instead of the chosen one.
    head_mask (L, H): 1 = on, 0 = off. ``use_cache=False`` re-runs the whole prefix each step (the
    reference the cache is tested against). Raises ValueError for an empty or too long prompt."""
    _check_prompt(model, ids)
    forced = forced or {}
    device = next(model.parameters()).device
    gate = None if head_mask is None else head_mask.to(device)
    generator = None if sampling.picks_the_top else torch.Generator().manual_seed(sampling.seed)
    ids = list(ids)
    prompt_length = len(ids)
    budget = min(max(int(steps), 0), MAX_STEPS, model.config.max_len - len(ids))
    records: list[Step] = []
    cache: KVCache | None = None
    pending = ids
    stopped = "steps"
    for index in range(budget):
        logits, attention, cache = _next(model, ids, pending, cache, gate, use_cache)
        probs = torch.softmax(logits.double(), -1)
        filtered = filtered_probabilities(logits, sampling)
        token = forced.get(index, choose(filtered, generator))
        records.append(
            Step(len(ids), int(token), probs.cpu().numpy(), filtered.cpu().numpy(), attention, index in forced)
        )
        ids.append(int(token))
        pending = [int(token)]
        if stop_at is not None and token == stop_at:
            stopped = "end"
            break
    else:
        if budget < steps:
            stopped = "context" if budget == model.config.max_len - prompt_length else "limit"
    return Generation(ids, prompt_length, records, stopped)


def _next(model, ids, pending, cache, gate, use_cache):
    """(last logits (V,), attention of the last query (L, H, T), new cache)."""
    device = next(model.parameters()).device
    if use_cache:
        out = forward_cached(model, torch.tensor([pending], device=device), cache, True, gate)
        logits, weights, cache = out.logits[0, -1], out.attention, out.cache
    else:
        out = model(torch.tensor([ids], device=device), need_weights=True, head_mask=gate)
        logits, weights = out.logits[0, -1], [w.weights for w in out.attention]
    rows = np.stack([w[0, :, -1].float().cpu().numpy() for w in weights])  # (L, H, T)
    return logits.float(), rows, cache


@torch.no_grad()
def next_token_probs(model: DecoderLM, ids: list[int], head_mask: torch.Tensor | None = None) -> np.ndarray:
    """(V,) the model's next-token probabilities after ``ids`` (no sampling settings)."""
    _check_prompt(model, ids)
    device = next(model.parameters()).device
    gate = None if head_mask is None else head_mask.to(device)
    logits = model(torch.tensor([ids], device=device), head_mask=gate).logits[0, -1]
    return torch.softmax(logits.double(), -1).cpu().numpy()
