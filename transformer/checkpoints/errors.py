"""The one error the importers raise: a ValueError whose message a user can act on."""

from __future__ import annotations

import torch


class CheckpointError(ValueError):
    """A checkpoint or vocabulary that cannot be used; the message says what was found and what to do."""


class CodedError(CheckpointError):
    """A CheckpointError the app translates: ``code`` names what is wrong (stable, a key of the app's
    catalogue), ``values`` the names and numbers its message takes (plain str/int/float, so the error
    crosses the isolated reader's boundary); the message is the English one the CLI prints."""

    def __init__(self, code: str, message: str, **values: str | int | float) -> None:
        super().__init__(message)
        self.code = code
        self.values = values


class LimitError(CheckpointError):
    """Reading untrusted bytes was stopped by a limit: ``limit`` is ``"time"`` (seconds), ``"memory"``
    (MB) or ``"busy"`` (no free reader); ``value`` the limit's number."""

    def __init__(self, message: str, limit: str, value: float) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


def describe_keys(state: dict[str, torch.Tensor], limit: int = 8) -> str:
    """'a.weight (16, 8), a.bias (16,), … (+3 more)': the first key names and shapes, for messages."""
    items = [f"{key} {tuple(value.shape)}" for key, value in list(state.items())[:limit]]
    more = len(state) - limit
    return ", ".join(items) + (f", … (+{more} more)" if more > 0 else "")
