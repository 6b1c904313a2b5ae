"""Whether the chosen model reads the language of a text (transformer.language_check), and the
message a page shows instead of a confident answer when it does not."""

from __future__ import annotations

from transformer.analysis.language_check import LanguageCheck, check_text, model_languages

from .i18n import t
from .models import Selection, model_folder

SCRIPT_KEYS = {
    "latin": "language.script_latin",
    "hangul": "language.script_hangul",
    "cjk": "language.script_cjk",
    "cyrillic": "language.script_cyrillic",
}
LANGUAGE_KEYS = {"en": "language.name_en", "ko": "language.name_ko"}
MESSAGE_KEYS = {
    "other_script": "language.other_script",
    "numbers_only": "language.numbers_only",
    "emoji_only": "language.emoji_only",
    "no_letters": "language.no_letters",
}
SHORT_KEYS = {
    "other_script": "language.short_other_script",
    "numbers_only": "language.short_no_words",
    "emoji_only": "language.short_no_words",
    "no_letters": "language.short_no_words",
}


def languages_of(selection: Selection, loaded) -> tuple[str, ...]:
    """The chosen model's languages: its metrics, else its folder (an upload has none: unknown)."""
    metrics = getattr(loaded, "metrics", None)
    return model_languages(metrics, None if selection.is_upload else model_folder(selection.model_key))


def check(text: str, languages: tuple[str, ...]) -> LanguageCheck:
    return check_text(text, languages)


def script_text(script: str | None) -> str:
    key = SCRIPT_KEYS.get(script or "")
    return t(key) if key else t("language.script_other", name=(script or "?").capitalize())


def languages_text(languages: tuple[str, ...]) -> str:
    return t("language.joined").join(t(LANGUAGE_KEYS[c]) if c in LANGUAGE_KEYS else c for c in languages)


def message(found: LanguageCheck) -> str | None:
    """The page's message for a text the model's answer says nothing about (None when it can read it)."""
    if found.ok:
        return None
    if found.code != "other_script":
        return t(MESSAGE_KEYS[found.code])
    share, script = f"{1 - found.share:.0%}", script_text(found.script)
    return t(MESSAGE_KEYS[found.code], share=share, script=script, languages=languages_text(found.languages))


def short(found: LanguageCheck) -> str:
    """A few words for a table cell or a title: why there is no answer."""
    return t(SHORT_KEYS[found.code])


def sentences_note(texts: list[str], languages: tuple[str, ...]) -> str | None:
    """One warning naming the sentences (1-based) the model cannot read in its language, and why;
    None when it reads them all."""
    bad = [(number, found) for number, text in enumerate(texts, start=1) if not (found := check(text, languages)).ok]
    if not bad:
        return None
    why = ", ".join(dict.fromkeys(short(found) for _, found in bad))
    return t("language.sentences", numbers=", ".join(str(number) for number, _ in bad), why=why)
