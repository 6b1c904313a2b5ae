"""The shared sentence box: one text for every page, kept in the URL (``?text=...``).

One line on screen is one input: lines are split on ``\\n`` and ``\\r\\n`` only, so vertical tabs,
form feeds, U+0085 or U+2028 inside a line never split it into several inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from . import session
from .i18n import current_lang, t
from .navigation import SharedWidgetChange, carry_over, ensure_shell, remember, remember_widget, settle, shared_value

EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "assets" / "examples.json"
TEXT_KEY = session.TEXT_WIDGET
SENTENCE_KEY = "sentence"
DEFAULT_TEXT = "The acting was wonderful and the story kept me hooked until the very end."
# the sentence the box starts with in each interface language (the Korean one suits the Korean model)
DEFAULT_TEXTS = {"en": DEFAULT_TEXT, "ko": "배우들 연기가 정말 좋았고 마지막까지 눈을 뗄 수 없었어요."}
MAX_CHARS = 100_000
MAX_LINES = 64
LABEL_CHARS = 80
LABELS_PREFIX = "_picker_labels_"  # the option labels a sentence picker showed last


def example_entries() -> dict[str, dict[str, str]]:
    """{example id: {"en": name, "ko": name, "text": text, "labels": [label per line]}} from ``assets/examples.json``."""
    return json.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))


def examples(lang: str | None = None) -> dict[str, str]:
    """{example id: text} of the examples written in ``lang`` (default: the interface's language; an
    entry without ``"lang"`` is English); the English ones when ``lang`` has none."""
    lang = lang or current_lang()
    entries = example_entries()
    chosen = {key: e["text"] for key, e in entries.items() if e.get("lang", "en") == lang}
    return chosen or {key: e["text"] for key, e in entries.items() if e.get("lang", "en") == "en"}


def reads_korean(vocab) -> bool:
    """True when a model's vocabulary is mostly Hangul (a Korean model: its examples should be Korean),
    judged on up to 2,000 entries spread over it."""
    itos = vocab.itos
    sample = itos[:: max(1, len(itos) // 2000)]
    hangul = sum(any("\uac00" <= ch <= "\ud7a3" for ch in tok) for tok in sample)
    return hangul > 0.3 * len(sample)


def default_text(lang: str | None = None) -> str:
    """The sentence the box starts with in ``lang`` (default: the interface's language)."""
    return DEFAULT_TEXTS.get(lang or current_lang(), DEFAULT_TEXT)


def follow_default_text(old: str, new: str) -> None:
    """When the interface language changes and the box still holds the old language's starting sentence,
    start it on the new language's (a text the user typed stays)."""
    if session.current_text(default_text(old)) == default_text(old):
        session.set_current_text(default_text(new))
        remember_widget(TEXT_KEY)


def expected_label(line: str) -> str | None:
    """The label a person gives an example's line (``labels`` in examples.json), None for any other
    text or a line people would not agree on. Whether the model gets it right is computed live."""
    for entry in example_entries().values():
        for text, label in zip(split_lines(entry["text"]), entry.get("labels", [])):
            if text == line.strip():
                return label
    return None


def example_name(key: str, lang: str = "en") -> str:
    """The example's button name in ``lang`` (English when that language has none)."""
    entry = example_entries()[key]
    return entry.get(lang) or entry["en"]


def lines_of(text: str | None) -> list[str]:
    """``text`` split at ``\\n`` / ``\\r\\n`` only (other separators stay inside their line)."""
    return [line.removesuffix("\r") for line in (text or "").split("\n")]


def split_lines(text: str | None) -> list[str]:
    """Non-blank lines, stripped, at most MAX_LINES (one line on screen = one input)."""
    return [line.strip() for line in lines_of(text) if line.strip()][:MAX_LINES]


def cut_text(text: str | None, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters, and its length when it was longer (0 when it fits): a box
    without the browser's ``max_chars`` (which drops a longer paste in silence) cuts here and says so
    with ``text.too_long``, the message a link's text gets."""
    text = text or ""
    return (text[:limit], len(text)) if len(text) > limit else (text, 0)


def _apply_example(key: str) -> None:
    session.set_current_text(example_entries()[key]["text"])
    remember_widget(TEXT_KEY)


def example_menu() -> None:
    """The examples, in a popover: one line of screen instead of a row of buttons."""
    lang = current_lang()
    with st.popover(t("text.examples"), icon=":material/lightbulb:"):
        for key in examples():
            st.button(
                example_name(key, lang), key=f"example_{key}", on_click=_apply_example, args=(key,), width="stretch"
            )


def text_box(label: str | None = None, height: int = 110, show_examples: bool = True) -> str:
    """The sentence widget shared by the pages (bound to the URL); returns its text (at most MAX_CHARS).

    The text typed on one page is the text on every page: after a page switch the box starts
    from the last text the user gave on any page (see ``ui.navigation``).
    """
    ensure_shell()
    box = st
    if show_examples:  # the examples beside the box, not on a line of their own: the figures start higher
        box, menu = st.columns([5, 1], vertical_alignment="bottom")
        with menu:
            example_menu()
    start = default_text()
    carry_over(TEXT_KEY, start)
    on_change = SharedWidgetChange(TEXT_KEY)
    text = box.text_area(
        label or t("text.box_label"),
        value=start,
        key=TEXT_KEY,
        height=height,
        bind="query-params",
        on_change=on_change,
        help=t("text.box_help", chars=f"{MAX_CHARS:,}", lines=MAX_LINES),
    )
    on_change.drawn()
    remember(TEXT_KEY, text)
    text = text or ""
    if len(text) > MAX_CHARS:
        st.warning(t("text.too_long", count=f"{len(text):,}", limit=f"{MAX_CHARS:,}"))
        text = text[:MAX_CHARS]
    count = sum(1 for line in lines_of(text) if line.strip())
    if count > MAX_LINES:
        st.warning(t("text.too_many_lines", limit=MAX_LINES, count=f"{count:,}"))
    return text


def _sentence_label(lines: list[str], index: int) -> str:
    line = " ".join(lines[index].split())  # control characters shown as spaces
    return f"{index + 1}: {line[:LABEL_CHARS]}{'…' if len(line) > LABEL_CHARS else ''}"


def _keep_labels_current(key: str, labels: list[str], wanted: int) -> None:
    """Streamlit stores a selectbox's value as its option's label: when the lines change, the old
    label would stay on screen (and the type-to-filter list would be the old one). Setting the
    value before drawing sends the new label with the new options."""
    if session.value(LABELS_PREFIX + key).get() != labels:
        session.value(key).set(wanted)
        session.value(LABELS_PREFIX + key).set(labels)


def chosen_sentence(lines: list[str], key: str = SENTENCE_KEY) -> int:
    """When several lines are typed, let the user pick one (by number, kept in the URL)."""
    if len(lines) <= 1:
        settle(key)
        session.value(LABELS_PREFIX + key).pop()
        return 0
    options = list(range(len(lines)))
    labels = [_sentence_label(lines, i) for i in options]
    shared = shared_value(key)
    valid = isinstance(shared, int) and 0 <= shared < len(lines)
    carry_over(key, 0, lambda i: labels[i], valid=valid)
    current = session.value(key).get()
    wanted = current if isinstance(current, int) and 0 <= current < len(lines) else (shared if valid else 0)
    _keep_labels_current(key, labels, wanted)
    on_change = SharedWidgetChange(key)
    index = st.selectbox(
        t("text.sentence"),
        options,
        key=key,
        bind="query-params",
        format_func=lambda i: labels[i],
        on_change=on_change,
    )
    on_change.drawn()
    remember(key, index)
    return index
