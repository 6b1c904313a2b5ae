"""The sandbox a chat template renders in (run in the isolated child by :mod:`.chat`): Jinja's immutable
sandbox, with the work a template can ask for bounded before it is done.

- ``**``, ``*`` and ``+`` are intercepted: an integer power or product of more than :data:`MAX_BITS` bits
  (``10 ** (10 ** 8)``) and a text or list longer than :data:`MAX_PROMPT_CHARS` (``'a' * 4000000000``,
  a text doubled in a loop) are refused before Python computes them;
- ``range`` counts: all the ranges of one render hold at most :data:`MAX_RANGE_ITEMS` numbers together
  (two nested ``range(99999)`` loops are refused at the second);
- the text written is cut off at :data:`MAX_PROMPT_CHARS`;
- deep recursion (a macro calling itself), arithmetic overflow and any other failure end as one
  :class:`ChatTemplateError`, never as Python's own exception.

Loops over anything else are bounded by the child's time limit.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..checkpoints.errors import CodedError, shown

MAX_PROMPT_CHARS = 200_000  # what a template may write (and the longest text or list it may build)
MAX_BITS = 65_536  # the largest integer a template may compute (about 19,700 digits)
MAX_RANGE_ITEMS = 100_000  # all the numbers of all the ranges of one render
SIZED = (str, list, tuple)


class ChatTemplateError(CodedError):
    """The model has no chat template, or its template fails on the conversation or asks for too much;
    ``code`` (``chat_...``) and ``values`` say which for the page, the message in English."""


def _raise(message: object):
    reason = shown(str(message), 200)
    raise ChatTemplateError("chat_refused", f"The chat template refused the conversation: {reason}", reason=reason)


def _too_big(code: str, what: str, **values: str) -> ChatTemplateError:
    message = f"The chat template asked for {what}, more than writing a prompt needs, so it was stopped."
    return ChatTemplateError(code, message, **values)


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with ``**``, ``*``, ``+`` and ``range`` bounded (see the module docstring).
    One environment per render: it counts that render's range items."""

    intercepted_binops = frozenset({"**", "*", "+"})

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True, autoescape=False)
        self.range_items = 0
        self.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
        self.globals["raise_exception"] = _raise
        self.globals["range"] = self.counted_range

    def counted_range(self, *args) -> range:
        numbers = range(*args)
        self.range_items += len(numbers)
        if self.range_items > MAX_RANGE_ITEMS:
            limit = f"{MAX_RANGE_ITEMS:,}"
            raise _too_big("chat_range", f"ranges of more than {limit} numbers in all", limit=limit)
        return numbers

    def call_binop(self, context, op: str, left, right):
        if op == "**":
            _check_power(left, right)
            return operator.pow(left, right)
        if op == "*":
            _check_product(left, right)
            return operator.mul(left, right)
        _check_sum(left, right)
        return operator.add(left, right)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_power(base, exponent) -> None:
    if _is_int(base) and _is_int(exponent) and exponent > 0 and abs(base) > 1:
        if (abs(base).bit_length() - 1) * exponent > MAX_BITS:
            raise _too_big("chat_number", f"a number of more than {MAX_BITS:,} bits", limit=f"{MAX_BITS:,}")


def _check_product(left, right) -> None:
    if _is_int(left) and _is_int(right) and left.bit_length() + right.bit_length() > MAX_BITS:
        raise _too_big("chat_number", f"a number of more than {MAX_BITS:,} bits", limit=f"{MAX_BITS:,}")
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, SIZED) and _is_int(times) and len(seq) * times > MAX_PROMPT_CHARS:
            raise _too_long(len(seq) * times)


def _check_sum(left, right) -> None:
    if isinstance(left, SIZED) and isinstance(right, SIZED) and len(left) + len(right) > MAX_PROMPT_CHARS:
        raise _too_long(len(left) + len(right))


def _too_long(size: int) -> ChatTemplateError:
    size_text, limit = f"{size:,}", f"{MAX_PROMPT_CHARS:,}"
    return _too_big("chat_size", f"a text or list of {size_text} items (limit {limit})", size=size_text, limit=limit)


def render_plain(
    template: str, conversations: Sequence[list[dict]], add_generation_prompt: bool, bos_token: str, eos_token: str
) -> list[str]:
    """Each conversation written out by ``template`` (runs in the isolated child); ChatTemplateError
    for every failure."""
    try:
        compiled = BoundedEnvironment().from_string(template)
        return [_render(compiled, messages, add_generation_prompt, bos_token, eos_token) for messages in conversations]
    except ChatTemplateError:
        raise
    except TemplateError as err:
        kind, reason = type(err).__name__, shown(str(err), 200)
        message = f"The chat template failed on this conversation ({kind}: {reason})."
        raise ChatTemplateError("chat_broken", message, kind=kind, reason=reason) from None
    except RecursionError:
        message = "The chat template calls itself too deeply (a macro that never stops calling itself)."
        raise ChatTemplateError("chat_recursion", message) from None
    except MemoryError:
        raise
    except Exception as err:  # noqa: BLE001 - a template's Python-level failure (overflow, bad types) is one message
        kind, reason = type(err).__name__, shown(str(err), 200)
        message = f"The chat template failed on this conversation ({kind}: {reason})."
        raise ChatTemplateError("chat_broken", message, kind=kind, reason=reason) from None


def _render(compiled, messages: list[dict], add_generation_prompt: bool, bos_token: str, eos_token: str) -> str:
    pieces, size = [], 0
    for piece in compiled.generate(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=bos_token, eos_token=eos_token
    ):
        size += len(piece)
        if size > MAX_PROMPT_CHARS:
            limit = f"{MAX_PROMPT_CHARS:,}"
            message = f"The chat template wrote more than {limit} characters."
            raise ChatTemplateError("chat_output", message, limit=limit)
        pieces.append(piece)
    return "".join(pieces)
