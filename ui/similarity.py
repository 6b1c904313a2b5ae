"""The Similarity page's models, input limits and cached runs (no widgets here).

Any text encoder the app loads can embed sentences (``transformer.similarity``); the page starts on
the real pretrained sentence encoder (all-MiniLM-L6-v2), the one model here trained for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer.analysis.similarity import SentenceRecipe, SimilarityResult, read_recipe, sentence_similarity
from transformer.bundle import LoadedModel

from . import session
from .compute import computed
from .models import Selection, bundled_models, get_model, model_folder

SENTENCE_ENCODER = "all-minilm-l6-v2"  # the bundled real pretrained sentence encoder
MAX_SENTENCES = 20  # sentences one run compares (a 20 x 20 matrix still shows every value)
MAX_CHARS = 30_000  # characters the box takes (20 sentences of 1,500 characters)
# what the box starts with, in either interface language: the encoder read English only (model input,
# not interface text): two pairs that mean the same in other words, and one sentence unlike both
EXAMPLES = (
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar.",
    "The stock market fell sharply today.",
    "Share prices dropped a lot this morning.",
    "The cat is sleeping on the sofa.",
)


@dataclass(frozen=True)
class Sentences:
    """The box's lines as the page runs them: ``kept`` (non-empty, at most MAX_SENTENCES), how many
    non-empty lines there were (``given``) and how many empty lines were skipped (``empty``)."""

    kept: list[str]
    given: int
    empty: int

    @property
    def cut(self) -> int:
        """Non-empty lines left out beyond MAX_SENTENCES."""
        return self.given - len(self.kept)


def split_sentences(text: str, limit: int = MAX_SENTENCES) -> Sentences:
    """One sentence per line (``\\n`` or ``\\r\\n``); blank lines skipped; the first ``limit`` kept."""
    lines = text.replace("\r\n", "\n").split("\n")
    filled = [line.strip() for line in lines if line.strip()]
    trailing = 1 if text.endswith("\n") else 0  # the newline after the last sentence is not an empty line
    return Sentences(filled[:limit], len(filled), len(lines) - len(filled) - trailing)


def similarity_models() -> list[str]:
    """Text encoders this session can compare sentences with: the real sentence encoder first, then
    the other bundled text classifiers, then this session's uploaded ones."""
    bundled = bundled_models(("classifier",))
    ordered = sorted(bundled, key=lambda name: name != SENTENCE_ENCODER)
    uploads = [key for key, m in session.uploads_of(LoadedModel).items() if m.config.kind == "classifier"]
    return ordered + uploads


def recipe_for(name: str) -> SentenceRecipe:
    """The model folder's own sentence recipe (sentence-transformers' files); the default (mean over the
    sentence's tokens, normalised) for an upload or a folder without one."""
    if session.is_upload(name):
        return SentenceRecipe()
    return read_recipe(model_folder(name))


def is_sentence_encoder(recipe: SentenceRecipe) -> bool:
    """True when the folder says how to make a sentence embedding: it was trained to give one."""
    return bool(recipe.source)


def extremes_text(similarity) -> tuple[str, dict]:
    """The catalogue key and fields naming the most and the least alike pair of a similarity matrix
    (n × n); with two sentences there is one pair, named once with its similarity."""
    n = similarity.shape[0]
    pairs = [(float(similarity[i, j]), i + 1, j + 1) for i in range(n) for j in range(i + 1, n)]
    high, low = max(pairs), min(pairs)
    if len(pairs) == 1:
        return "similarity.one_pair", {"a": high[1], "b": high[2], "value": f"{high[0]:.2f}"}
    return "similarity.most_alike", {"a": high[1], "b": high[2], "value": f"{high[0]:.2f}", "c": low[1], "d": low[2],
                                     "low": f"{low[0]:.2f}"}  # fmt: skip


@computed("similarity")
def run_similarity(name: str, device: str, texts: tuple[str, ...]) -> SimilarityResult:
    """Every pair of ``texts`` compared by model ``name`` on ``device`` (cached per model, device and texts)."""
    loaded = get_model(Selection(name, device, 0))
    return sentence_similarity(loaded, list(texts), recipe_for(name))
