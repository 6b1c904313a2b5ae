"""The shared sentence box: one text for every page, kept in the URL (``?text=...``)."""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from .navigation import carry_over, ensure_shell, remember, shared_value

EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "assets" / "examples.json"
TEXT_KEY = "text"
SENTENCE_KEY = "sentence"
DEFAULT_TEXT = "The acting was wonderful and the story kept me hooked until the very end."
MAX_CHARS = 100_000
MAX_LINES = 64
LABEL_CHARS = 80


def examples() -> dict[str, str]:
    """{button name: text} from ``assets/examples.json``."""
    return json.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))


def split_lines(text: str | None) -> list[str]:
    """Non-blank lines, stripped, at most MAX_LINES."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()][:MAX_LINES]


def _apply_example(name: str) -> None:
    st.session_state[TEXT_KEY] = examples()[name]


def text_box(label: str = "Sentences — one per line", height: int = 110, show_examples: bool = True) -> str:
    """The sentence widget shared by the pages (bound to the URL); returns its text.

    The text typed on one page is the text on every page: after a page switch the box starts
    from the previous page's text (see ``ui.navigation``).
    """
    ensure_shell()
    if show_examples:
        cols = st.columns(len(examples()))
        for col, name in zip(cols, examples()):
            col.button(name, key=f"example_{name}", on_click=_apply_example, args=(name,), width="stretch")
    carry_over(TEXT_KEY, DEFAULT_TEXT)
    text = st.text_area(
        label,
        value=DEFAULT_TEXT,
        key=TEXT_KEY,
        height=height,
        max_chars=MAX_CHARS,
        bind="query-params",
        help="Each line is one input. The text is kept in the page address, "
        "so a link to this page reopens the same view.",
    )
    remember(TEXT_KEY, text)
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        st.warning(f"Only the first {MAX_LINES} of {len(lines)} lines are used.")
    return text or ""


def _sentence_label(lines: list[str], index: int) -> str:
    line = lines[index]
    return f"{index + 1}: {line[:LABEL_CHARS]}{'…' if len(line) > LABEL_CHARS else ''}"


def chosen_sentence(lines: list[str], key: str = SENTENCE_KEY) -> int:
    """When several lines are typed, let the user pick one (by number, kept in the URL)."""
    if len(lines) <= 1:
        return 0
    options = list(range(len(lines)))
    shared = shared_value(key)
    carry_over(key, 0, lambda i: _sentence_label(lines, i), valid=isinstance(shared, int) and shared < len(lines))
    index = st.selectbox(
        "Sentence", options, key=key, bind="query-params", format_func=lambda i: _sentence_label(lines, i)
    )
    remember(key, index)
    return index
