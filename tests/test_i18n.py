"""The catalogues: every key in both languages, every key used, every used key defined."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from ui.i18n import LANGUAGES, catalogue, lang_from, translate

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "streamlit_app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]
CALL = re.compile(r"""\b(?:t|translate)\(\s*["']([a-z0-9_]+\.[a-z0-9_.]+)["']""")
LITERAL = re.compile(r"""["']([a-z0-9_]+\.[a-z0-9_.]+)["']""")


def source_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in SOURCES)


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_both_languages_have_the_same_keys():
    english, korean = set(catalogue("en")), set(catalogue("ko"))
    assert not english - korean, f"missing in Korean: {sorted(english - korean)}"
    assert not korean - english, f"missing in English: {sorted(korean - english)}"


def test_translations_keep_the_format_fields():
    korean = catalogue("ko")
    wrong = [key for key, text in catalogue("en").items() if fields(text) != fields(korean[key])]
    assert not wrong, f"format fields differ between English and Korean: {wrong}"


def test_every_key_used_in_the_code_is_defined():
    called = set(CALL.findall(source_text()))
    missing = sorted(called - set(catalogue("en")))
    assert not missing, f"used but not in the catalogue: {missing}"


def test_every_defined_key_is_used():
    literals = set(LITERAL.findall(source_text()))
    unused = sorted(set(catalogue("en")) - literals)
    assert not unused, f"in the catalogue but never used: {unused}"


@pytest.mark.parametrize(
    ("query", "session", "locale", "expected"),
    [
        ("ko", "en", "en-US", "ko"),
        (None, "ko", "en-US", "ko"),
        (None, None, "ko-KR", "ko"),
        (None, None, "fr-FR", "en"),
        ("xx", None, None, "en"),
    ],
)
def test_language_order_address_session_browser_english(query, session, locale, expected):
    assert lang_from(query, session, locale) == expected


def test_missing_korean_text_falls_back_to_english(tmp_path, monkeypatch):
    import ui.i18n as i18n

    for lang, data in {"en": '{"hello": "Hello {name}", "only_en": "x"}', "ko": '{"hello": "안녕 {name}"}'}.items():
        (tmp_path / lang).mkdir()
        (tmp_path / lang / "demo.json").write_text(data, encoding="utf-8")
    monkeypatch.setattr(i18n, "LOCALES_DIR", tmp_path)
    i18n.catalogue.cache_clear()
    try:
        assert translate("demo.hello", "ko", name="A") == "안녕 A"
        assert translate("demo.only_en", "ko") == "x"
        assert set(LANGUAGES) == {"en", "ko"}
    finally:
        i18n.catalogue.cache_clear()


def test_korean_catalogue_texts_are_korean():
    """Every Korean text holds Hangul or no English sentence (a text copied but not translated fails)."""
    from .test_korean_pages import english_sentences

    left = {
        key: runs
        for key, text in catalogue("ko").items()
        if (runs := english_sentences(re.sub(r"\{[a-z_]+\}", " ", text), []))
    }
    assert not left, f"English sentences in the Korean catalogue: {left}"


def test_terms_follow_the_course_notebooks():
    """The course's Korean terms, not other spellings, in the shell's own catalogues."""
    korean = {k: v for k, v in catalogue("ko").items() if k.split(".")[0] in {"common", "sidebar", "start", "tour"}}
    joined = "\n".join(korean.values())
    for term in ("어텐션", "위치 인코딩", "헤드", "레이어", "마스크", "토큰", "임베딩", "소프트맥스"):
        assert term in joined, term
    for wrong in ("주의 집중", "위치 부호화", "머리"):
        assert wrong not in joined, wrong
