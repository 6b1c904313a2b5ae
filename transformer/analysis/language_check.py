"""Is this text in a language the model was trained on? A check by writing system (script).

A model reads the languages its training data was in (``model_languages``: from its metrics.json,
or from a Hugging Face folder's model card); each language is written in one script (English in
Latin letters, Korean in Hangul). A text is checked by the shares of its letters in each script:
when more than half of them are in scripts none of the model's languages uses, the model's answer
says nothing about the text. Texts without letters (numbers only, emoji only, punctuation only)
are not in a wrong language but hold no words, and get their own reason.

Two languages written in the same script (English and French) are not told apart: a script is
what can be checked without a language-identification model.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

LANGUAGE_NAMES = {"en": "English", "ko": "Korean"}
SCRIPTS = {"en": "latin", "ko": "hangul"}  # the script each known language is written in
SCRIPT_NAMES = {"latin": "Latin letters", "hangul": "Hangul", "cjk": "Chinese characters"}
MOST = 0.5  # more than this share of letters in scripts the model never saw: not its language

# Corpora named in our metrics.json data descriptions, and the language of each.
CORPORA = (("IMDB", "en"), ("SST-2", "en"), ("aclImdb", "en"), ("NSMC", "ko"), ("nsmc", "ko"))
DATA_KEYS = {"english": "en", "korean": "ko"}  # a language model's data: one entry per language
# Published models whose folders do not say their language (no model card): name -> languages.
KNOWN_MODELS = {"all-minilm-l6-v2": ("en",), "minilm-l6-h384-uncased": ("en",)}
CARD_FILE, METRICS_FILE = "README.md", "metrics.json"


@dataclass(frozen=True)
class Scripts:
    """How many letters of a text are in each script (``latin``, ``hangul``, or the Unicode
    name's first word for others, such as ``cyrillic`` or ``cjk``), and whether it holds digits
    or pictographs (emoji and other symbols)."""

    letters: dict[str, int]
    digits: int
    symbols: int

    @property
    def total(self) -> int:
        return sum(self.letters.values())

    def share(self, scripts: set[str]) -> float:
        """The share of letters written in ``scripts`` (0 without letters)."""
        return sum(n for s, n in self.letters.items() if s in scripts) / self.total if self.total else 0.0

    def main(self) -> str | None:
        """The script with the most letters (None without letters)."""
        return max(self.letters, key=self.letters.__getitem__) if self.letters else None


@dataclass(frozen=True)
class LanguageCheck:
    """``ok``: the model's answer is about this text. ``code``: ``ok``, ``unknown`` (the model does
    not say its languages; nothing checked), ``other_script``, ``numbers_only``, ``emoji_only`` or
    ``no_letters`` (``numbers`` for a model that reads numbers). ``script``: the text's main script; ``share``: the share of its letters in the
    model's scripts; ``languages``: the model's (empty when unknown); ``reason``: one English sentence."""

    ok: bool
    code: str
    script: str | None
    share: float
    languages: tuple[str, ...]
    reason: str

    def record(self) -> dict:
        """The CLI record's ``language`` field."""
        return {
            "ok": self.ok,
            "code": self.code,
            "reason": self.reason,
            "script": self.script,
            "model_share": round(self.share, 3),
            "model_languages": list(self.languages),
        }


def script_of(ch: str) -> str | None:
    """The script of one character when it is a letter (None otherwise)."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    if "\uac00" <= ch <= "\ud7a3" or "\u1100" <= ch <= "\u11ff" or "\u3130" <= ch <= "\u318f":
        return "hangul"
    name = unicodedata.name(ch, "")
    if name.startswith(("LATIN", "FULLWIDTH LATIN")):
        return "latin"
    return name.split(" ")[0].lower() or "other"


def count_scripts(text: str) -> Scripts:
    """Letters per script, digits and symbols (emoji, pictographs) of ``text``."""
    letters: dict[str, int] = {}
    digits = symbols = 0
    for ch in text:
        script = script_of(ch)
        if script is not None:
            letters[script] = letters.get(script, 0) + 1
        elif ch.isdigit():
            digits += 1
        elif unicodedata.category(ch) == "So":
            symbols += 1
    return Scripts(letters, digits, symbols)


def script_name(script: str | None) -> str:
    return SCRIPT_NAMES.get(script or "", (script or "").capitalize())


def language_names(languages: tuple[str, ...]) -> str:
    return " and ".join(LANGUAGE_NAMES.get(code, code) for code in languages)


def check_text(text: str, languages: tuple[str, ...], reads_numbers: bool = False) -> LanguageCheck:
    """Whether a model trained on ``languages`` (ISO codes; empty: unknown) can read ``text``.
    ``reads_numbers``: the model reads digits as its words (the dates translator), so a text of
    numbers only is one it reads."""
    counted = count_scripts(text)
    if not counted.total and reads_numbers and counted.digits:
        reason = "This text has only numbers, which the model reads."
        return LanguageCheck(True, "numbers", None, 0.0, languages, reason)
    if not counted.total:
        return _no_letters(counted, languages)
    scripts = {SCRIPTS[code] for code in languages if code in SCRIPTS}
    main = counted.main()
    if not languages or any(code not in SCRIPTS for code in languages):  # a script we do not know: no check
        return LanguageCheck(True, "unknown", main, 0.0, languages, _unknown_reason(languages))
    share = counted.share(scripts)
    if 1.0 - share <= MOST:
        reason = f"{share:.0%} of the letters are in the script of {language_names(languages)}, which the model reads."
        return LanguageCheck(True, "ok", main, share, languages, reason)
    reason = (
        f"Most of this text ({1 - share:.0%} of its letters) is in {script_name(main)}; "
        f"the model was trained on {language_names(languages)} only, so its answer says nothing about this text."
    )
    return LanguageCheck(False, "other_script", main, share, languages, reason)


def _unknown_reason(languages: tuple[str, ...]) -> str:
    if languages:
        return f"The model reads {language_names(languages)}; its script is not one this check knows: not checked."
    return "The model does not say which languages it was trained on: not checked."


def _no_letters(counted: Scripts, languages: tuple[str, ...]) -> LanguageCheck:
    """A text without letters: not a wrong language, but there are no words to read."""
    if counted.digits and counted.digits >= counted.symbols:
        code, what = "numbers_only", "only numbers"
    elif counted.symbols:
        code, what = "emoji_only", "only emoji or symbols"
    else:
        code, what = "no_letters", "no letters"
    reason = f"This text has {what} and no words: the model's answer says nothing about it."
    return LanguageCheck(False, code, None, 0.0, languages, reason)


def metrics_languages(metrics: dict | None) -> tuple[str, ...]:
    """The languages a metrics.json says the model was trained on: its ``languages`` list, else the
    corpora its ``data`` names (an encoder-decoder's "source -> target" task: the source side)."""
    if not metrics:
        return ()
    if isinstance(metrics.get("languages"), list):
        return tuple(str(code) for code in metrics["languages"])
    data = metrics.get("data")
    if isinstance(data, str):
        return _named_languages(data.split("->")[0], by_word=True)
    if not isinstance(data, dict):
        return ()
    found = [DATA_KEYS[key] for key in data if key in DATA_KEYS]
    found += [code for text in _datasets(data) for code in _named_languages(text)]
    return tuple(dict.fromkeys(found))


def datasets(metrics: dict | None) -> list[str]:
    """The datasets a metrics.json says the model was trained on (its ``data``'s ``dataset`` strings)."""
    data = (metrics or {}).get("data")
    return _datasets(data) if isinstance(data, dict) else []


def _datasets(data: dict) -> list[str]:
    """Every ``dataset`` string in ``data`` and the dicts inside it."""
    out = [data["dataset"]] if isinstance(data.get("dataset"), str) else []
    for value in data.values():
        if isinstance(value, dict):
            out += _datasets(value)
    return out


def _named_languages(text: str, by_word: bool = False) -> tuple[str, ...]:
    found = [code for name, code in CORPORA if name in text]
    if by_word:
        found += [code for code, name in LANGUAGE_NAMES.items() if re.search(rf"\b{name}\b", text)]
    return tuple(dict.fromkeys(found))


def card_languages(card: str) -> tuple[str, ...]:
    """The ``language:`` of a model card's YAML front matter (``language: en`` or a list)."""
    match = re.match(r"---\s*\n(.*?)\n---", card, re.S)
    if not match:
        return ()
    lines = match.group(1).splitlines()
    for i, line in enumerate(lines):
        key, _, value = line.partition(":")
        if key.strip() != "language":
            continue
        if value.strip():
            return tuple(v.strip(" '\"") for v in value.strip(" []").split(",") if v.strip(" '\""))
        items = [m.group(1) for m in map(re.compile(r"\s*-\s*(\S+)").match, lines[i + 1 :]) if m]
        return tuple(v.strip("'\"") for v in items)
    return ()


def folder_languages(folder: str | Path | None) -> tuple[str, ...]:
    """What a model folder says about its languages: metrics.json, a model card, or a published
    model known by its folder name; empty when it says nothing."""
    if folder is None or not Path(folder).is_dir():
        return ()
    folder = Path(folder)
    if (folder / METRICS_FILE).is_file():
        try:
            found = metrics_languages(json.loads((folder / METRICS_FILE).read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError):
            found = ()
        if found:
            return found
    if (folder / CARD_FILE).is_file():
        found = card_languages((folder / CARD_FILE).read_text(encoding="utf-8", errors="replace"))
        if found:
            return found
    return KNOWN_MODELS.get(folder.name.lower(), ())


def model_languages(metrics: dict | None, folder: str | Path | None = None) -> tuple[str, ...]:
    """A loaded model's languages: its metrics first, then its folder (empty: unknown)."""
    return metrics_languages(metrics) or folder_languages(folder)
