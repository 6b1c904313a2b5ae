"""The one error the importers raise: a ValueError whose message a user can act on."""

from __future__ import annotations

import reprlib

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


SHOWN_CHARS = 60  # a name or value from a file is shown with at most this many characters
_BRIEF = reprlib.Repr()  # short reprs of lists and numbers (its keyword arguments need Python 3.12)
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxdict = 2, 6, 6
_BRIEF.maxstring = _BRIEF.maxlong = _BRIEF.maxother = 4 * SHOWN_CHARS


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A name, key or value read from an untrusted file, safe to print on a terminal or a page: control
    characters (terminal escapes, line breaks, bidirectional marks) written as ``\\x1b``-style escapes,
    and cut to ``limit`` characters with the full length said (``'blk.0…' (+99,940 characters)``)."""
    text = value if isinstance(value, str) else _BRIEF.repr(value)  # a 4M-value list costs nothing either
    if len(text) > 4 * limit:  # escape only what can be shown: a 1 MB name costs nothing
        text, extra = text[: 4 * limit], len(text) - 4 * limit
    else:
        extra = 0
    escaped = "".join(_escaped(c) for c in text)
    if len(escaped) <= limit and not extra:
        return escaped
    total = len(text) + extra
    return f"{escaped[: limit - 1]}… ({total:,} characters)"


def _escaped(char: str) -> str:
    """One character as shown: printable ones as they are, others as a Python escape."""
    if char.isprintable() or char == " ":
        return char
    return char.encode("unicode_escape").decode("ascii")
