"""Turning next-token logits into a distribution to pick from: temperature, top-k, top-p.

Every setting is bounded rather than refused where a limit makes sense: temperature 0 is greedy
(the limit of softmax(z / T) as T -> 0), a huge temperature tends to uniform over what is kept,
top-p 0 keeps the single most likely token, top-k above the vocabulary keeps it all.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

MAX_TEMPERATURE = 1e6


@dataclass(frozen=True)
class Sampling:
    """greedy: always the most likely token; otherwise a seeded draw from the filtered distribution.
    top_k 0: no top-k filter; top_p 1.0: no nucleus filter."""

    greedy: bool = True
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= MAX_TEMPERATURE or self.temperature != self.temperature:
            raise ValueError(f"temperature must be between 0 and {MAX_TEMPERATURE:g}; got {self.temperature}.")
        if self.top_k < 0:
            raise ValueError(f"top_k must be 0 (off) or a positive number of tokens; got {self.top_k}.")
        if not 0.0 <= self.top_p <= 1.0:
            raise ValueError(f"top_p must be between 0 and 1; got {self.top_p}.")

    @property
    def picks_the_top(self) -> bool:
        """True when the choice is the most likely token whatever the seed (greedy, or temperature 0)."""
        return self.greedy or self.temperature == 0.0


def filtered_probabilities(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """(V,) logits -> (V,) float64 probabilities after temperature, top-k and top-p (renormalised).
    Greedy or temperature 0 puts all the mass on the most likely token."""
    logits = logits.double()
    if sampling.picks_the_top:
        out = torch.zeros_like(logits)
        out[int(logits.argmax())] = 1.0
        return out
    probs = torch.softmax(logits / sampling.temperature, dim=-1)
    if not sampling.top_k and sampling.top_p >= 1.0:
        return probs / probs.sum()  # nothing filtered: no need to sort the vocabulary
    keep = torch.ones_like(probs, dtype=torch.bool)
    order = torch.argsort(probs, descending=True)
    if sampling.top_k:
        keep[order[sampling.top_k :]] = False
    if sampling.top_p < 1.0:
        sorted_probs = probs[order]
        before = torch.cumsum(sorted_probs, 0) - sorted_probs  # mass of the tokens ranked above each one
        drop = before >= sampling.top_p
        drop[0] = False  # the most likely token is always kept (top-p 0 keeps just it)
        keep[order[drop]] = False
    probs = probs * keep
    return probs / probs.sum()


def choose(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """The most likely id when the distribution is one-hot or no generator is given, else a draw."""
    if generator is None:
        return int(probs.argmax())
    return int(torch.multinomial(probs.float(), 1, generator=generator))
