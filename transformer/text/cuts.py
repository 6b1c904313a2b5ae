"""One sentence cut three ways, side by side: the model's own WordPiece pieces, morphemes from an
analyser, and syllables — so that a student sees why the model sees 재미없다 the way it does.

Each cut is judged against its own vocabulary, learned on the same training split as the model
(the morpheme and syllable vocabularies come from the tokenizer comparison runs, see docs/models.md), so
"unknown" means the same thing in each column: not seen at least twice in training.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.loaded import LoadedModel
from ..core.pieces import syllables
from ..core.tokenizer import Vocab
from .morphemes import available, mecab_morphemes

VOCABULARIES = Path(__file__).resolve().parents[2] / "assets" / "tokenizers"
MORPHEME_VOCAB = "nsmc-mecab-morphemes.txt"
SYLLABLE_VOCAB = "nsmc-syllables.txt"
CUT_NAMES = ("pieces", "morphemes", "syllables")


@dataclass(frozen=True)
class Cut:
    """One way of cutting a text: its tokens, which of them its vocabulary lacks, and whether it could be made."""

    name: str  # one of CUT_NAMES
    tokens: tuple[str, ...]
    unknown: tuple[bool, ...]
    available: bool = True  # False: the analyser is not installed (tokens are empty)
    vocabulary_size: int = 0


@lru_cache(maxsize=4)
def _vocabulary(folder: Path, name: str) -> Vocab | None:
    path = folder / name
    return Vocab.load(path) if path.is_file() else None


def _judged(name: str, tokens: list[str], vocab: Vocab | None) -> Cut:
    unknown = tuple(vocab is not None and tok not in vocab for tok in tokens)
    return Cut(name, tuple(tokens), unknown, True, len(vocab) if vocab is not None else 0)


def three_cuts(text: str, loaded: LoadedModel, folder: Path = VOCABULARIES) -> list[Cut]:
    """The model's pieces, mecab-ko morphemes (``available=False`` when mecab-ko is not installed) and
    syllables of ``text``, in that order."""
    encoded = loaded.text_encoder().encode(text)
    cuts = [Cut("pieces", tuple(encoded.tokens), tuple(encoded.unknown), True, len(loaded.vocab))]
    if "mecab" in available():
        cuts.append(_judged("morphemes", mecab_morphemes(text), _vocabulary(folder, MORPHEME_VOCAB)))
    else:
        cuts.append(Cut("morphemes", (), (), available=False))
    cuts.append(_judged("syllables", syllables(text), _vocabulary(folder, SYLLABLE_VOCAB)))
    return cuts


def has_hangul(text: str) -> bool:
    """True when ``text`` holds a Hangul syllable or jamo."""
    return any("\uac00" <= ch <= "\ud7a3" or "\u1100" <= ch <= "\u11ff" or "\u3130" <= ch <= "\u318f" for ch in text)
