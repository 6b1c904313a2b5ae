"""User text written back on a page: cut to a box's limit with a message, and echoed escaped.

A box with ``max_chars`` makes the browser drop a longer paste in silence (the old text stays, no
message); the pages' boxes have no ``max_chars`` and cut here instead, with the message a link's text
gets (``text.too_long``). Text a user typed that a page shows again (a warning, a caption) goes
through :func:`echo`: Markdown-escaped, so ``![i](x)``, ``**b**``, ``$x$`` or ``:red[x]`` show as
typed, and cut, so a 1 MB paste is not written back whole.
"""

from __future__ import annotations

from .i18n import t
from .markdown import md_escape

ECHO_CHARS = 60  # characters of a user's text a message repeats


def cut_to_limit(text: str, limit: int) -> tuple[str, str | None]:
    """``text`` cut to ``limit`` characters, and the message to show when it was cut (None when not)."""
    if len(text) <= limit:
        return text, None
    return text[:limit], t("text.too_long", count=f"{len(text):,}", limit=f"{limit:,}")


def shortened(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (``…`` where it was cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def echo(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` as a Markdown message may repeat it: shortened, every markup character escaped."""
    return md_escape(shortened(text, limit))
