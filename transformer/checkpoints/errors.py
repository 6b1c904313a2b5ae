"""The one error the importers raise: a ValueError whose message a user can act on."""

from __future__ import annotations

import torch


class CheckpointError(ValueError):
    """A checkpoint or vocabulary that cannot be used; the message says what was found and what to do."""


def describe_keys(state: dict[str, torch.Tensor], limit: int = 8) -> str:
    """'a.weight (16, 8), a.bias (16,), … (+3 more)': the first key names and shapes, for messages."""
    items = [f"{key} {tuple(value.shape)}" for key, value in list(state.items())[:limit]]
    more = len(state) - limit
    return ", ".join(items) + (f", … (+{more} more)" if more > 0 else "")
