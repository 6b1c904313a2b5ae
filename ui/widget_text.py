"""Streamlit's own widget texts in the session's language.

Streamlit 1.67 has no setting for the language of its own widget texts. A multiselect takes a
``placeholder`` (pages pass ``t("widgets.choose")``), but a file uploader's button ("Upload") and its
note ("200MB per file • PT, PTH, …") are written by Streamlit's front end: the only way to change them
is CSS, hiding the text (font size 0) and writing the translation after it (``::after``). The generic
rule below covers every uploader; :func:`uploader_note_css` writes one uploader's own limit and types.
"""

from __future__ import annotations

import json

from .i18n import DEFAULT_LANG, translate

BUTTON = '[data-testid="stFileUploaderDropzone"] button [data-testid="stMarkdownContainer"] p'
NOTE = '[data-testid="stFileUploaderDropzoneInstructions"] span'


def _css_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a quoted CSS string (JSON escaping is valid CSS here)


def widget_text_css(lang: str) -> str:
    """CSS that writes the uploaders' button and note in ``lang`` ("" for English: Streamlit's own)."""
    if lang == DEFAULT_LANG:
        return ""
    browse, drop = translate("widgets.browse", lang), translate("widgets.drop", lang)
    return (
        f"{BUTTON} {{ font-size: 0; }} {BUTTON}::after {{ content: {_css_text(browse)}; font-size: 1rem; }} "
        f"{NOTE} {{ font-size: 0; }} {NOTE}::after {{ content: {_css_text(drop)}; font-size: 0.9rem; }}"
    )


def uploader_note_css(key: str, lang: str, megabytes: int, types: list[str]) -> str:
    """One uploader's note (the widget with ``key``) in ``lang``: its size limit and file types."""
    if lang == DEFAULT_LANG:
        return ""
    note = translate("widgets.limit", lang, mb=megabytes) + " • " + ", ".join(kind.upper() for kind in types)
    return f".st-key-{key} {NOTE}::after {{ content: {_css_text(note)}; }}"
