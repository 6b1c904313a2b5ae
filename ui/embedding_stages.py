"""What the Positional encoding page draws of one sentence's input: the parts, their plain sum, and what
the embedding LayerNorm (where a model has one, as BERT-family encoders do) makes of that sum.

The analysis gives the token embeddings, the positional encodings and the first layer's input; the plain
sum is computed here, so that a figure titled "token + position = sum" shows exactly that sum and not the
LayerNorm's output (whose values, 7-11 for parts of size ~1 and ~0.4, no sum of those parts can give).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLIP_SHARE = 0.99  # a learned table's colours span the middle 99 % of its values (a few outliers flatten the rest)


@dataclass(frozen=True)
class EmbeddingStages:
    """tokens, positions (n, E); segment (E,) the segment vector of type 0 the model adds to every token, or
    None; summed (n, E) tokens + positions (+ segment); normed (n, D) the first layer's input when the model
    changes the sum before it (LayerNorm, projection), else None: the sum is that input."""

    tokens: np.ndarray
    positions: np.ndarray
    segment: np.ndarray | None
    summed: np.ndarray
    normed: np.ndarray | None

    def norms(self) -> dict[str, np.ndarray]:
        """Per-token L2 norms (n,) of each stage drawn: tokens, positions, summed (and normed)."""
        stages = {"tokens": self.tokens, "positions": self.positions, "summed": self.summed}
        if self.normed is not None:
            stages["normed"] = self.normed
        return {name: np.linalg.norm(a, axis=-1) for name, a in stages.items()}


def embedding_stages(
    tokens: np.ndarray, positions: np.ndarray, first_input: np.ndarray, segment: np.ndarray | None = None
) -> EmbeddingStages:
    """The stages of one sentence's input: tokens, positions (n, E), the first layer's input (n, D) as the
    analysis gives it, and the model's segment vector (E,) when it adds one."""
    summed = tokens + positions if segment is None else tokens + positions + segment
    same = first_input.shape == summed.shape and np.allclose(first_input, summed, rtol=1e-4, atol=1e-5)
    return EmbeddingStages(tokens, positions, segment, summed, None if same else first_input)


def colour_limit(values: np.ndarray, share: float = CLIP_SHARE) -> float:
    """The colour scale's half-width for a table: the ``share`` quantile of its absolute values (> 0)."""
    if not values.size:
        return 1.0
    return max(float(np.quantile(np.abs(values), share)), 1e-6)


def segment_vector(model) -> np.ndarray | None:
    """The segment embedding of type 0 an imported BERT-family encoder adds to every token (E,), or None."""
    embedding = getattr(getattr(model, "encoder", None), "embedding", None)
    types = getattr(embedding, "token_types", None)
    return None if types is None else types.weight[0].detach().float().cpu().numpy()
