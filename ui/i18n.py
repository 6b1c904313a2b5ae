"""Every text the app shows, in English and Korean: one catalogue per language and page.

Catalogues are flat JSON objects under ``ui/locales/<lang>/<namespace>.json``; a key is
``<namespace>.<name>`` (``"attention.title"``) and its text may hold ``str.format`` fields.
Pages call :func:`t`, which reads the session's language; pure figure functions take a
``lang`` argument and call :func:`translate`.

The language comes from ``?lang=ko|en`` in the address, then the session's earlier choice,
then the browser's language (``st.context.locale``), then English.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from .korean_particles import resolve as resolve_particles

LOCALES_DIR = Path(__file__).resolve().parent / "locales"
LANGUAGES = {"en": "English", "ko": "한국어"}
DEFAULT_LANG = "en"
LANG_KEY = "lang"


@cache
def catalogue(lang: str) -> dict[str, str]:
    """All keys of ``lang``: ``{"<namespace>.<name>": text}`` (read once per process)."""
    entries: dict[str, str] = {}
    for path in sorted((LOCALES_DIR / lang).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        entries.update({f"{path.stem}.{name}": text for name, text in data.items()})
    return entries


def translate(key: str, lang: str = DEFAULT_LANG, /, **fields) -> str:
    """The text of ``key`` in ``lang`` (English when ``lang`` lacks it), formatted with ``fields``.

    A key missing in every catalogue raises KeyError: the catalogue test finds those first.
    """
    entries = catalogue(lang if lang in LANGUAGES else DEFAULT_LANG)
    text = entries.get(key)
    if text is None:
        text = catalogue(DEFAULT_LANG)[key]
    text = text.format(**fields) if fields else text
    return resolve_particles(text) if lang == "ko" else text  # 0.021(이)었 -> 0.021이었


def lang_from(query: str | None, session: str | None, locale: str | None) -> str:
    """The language to use: the address, then the session's choice, then the browser, then English."""
    for candidate in (query, session, (locale or "")[:2].lower()):
        if candidate in LANGUAGES:
            return candidate
    return DEFAULT_LANG


def resolve_lang() -> str:
    """Work out this session's language (see the module docstring) and remember it for this run.

    The shell calls this once at the top of every run; :func:`t` then only reads the result.
    """
    import streamlit as st

    from . import session

    try:
        locale = st.context.locale
    except Exception:  # noqa: BLE001 - AppTest and bare runs have no browser context
        locale = None
    lang = lang_from(st.query_params.get(LANG_KEY), session.language(), locale)
    session.set_language(lang)
    return lang


def set_lang(lang: str) -> None:
    """The session's choice (the sidebar switch): kept in the session and in the address."""
    import streamlit as st

    from . import session

    lang = lang if lang in LANGUAGES else DEFAULT_LANG
    session.set_language(lang)
    st.query_params[LANG_KEY] = lang


def current_lang() -> str:
    """This session's language: resolved by the shell at the top of the run, else resolved now."""
    from . import session

    lang = session.language()
    return lang if lang in LANGUAGES else resolve_lang()


def t(key: str, /, **fields) -> str:
    """The text of ``key`` in this session's language."""
    return translate(key, current_lang(), **fields)


CLASS_NAMES = {"positive": "common.label_positive", "negative": "common.label_negative"}


def class_name_in(name: str, lang: str) -> str:
    """A model's class name as ``lang`` writes it (the sentiment classes are translated; any other
    name, e.g. an uploaded model's own, is shown as the model gives it)."""
    key = CLASS_NAMES.get(name)
    return translate(key, lang) if key is not None else name


def class_name(name: str) -> str:
    """A model's class name in this session's language (see :func:`class_name_in`)."""
    return class_name_in(name, current_lang())
