"""The two translation tasks, by name: their generators, lexicons and how their targets are written."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import dates, lexicon, word_order
from .pairs import Pair


@dataclass(frozen=True)
class Task:
    """name; sample(rng, split) -> Pair; the source and target word lists; examples for the page;
    joiner: how target tokens are joined as text ("" for characters, " " for words); attached: the
    target tokens a reader writes onto the word before them (Korean particles), see :meth:`written`."""

    name: str
    sample: Callable[[random.Random, str], Pair]
    source_words: Callable[[], list[str]]
    target_words: Callable[[], list[str]]
    examples: Callable[[], list[Pair]]
    joiner: str
    description: str
    attached: frozenset[str] = frozenset()

    def written(self, words: Iterable[str]) -> str:
        """Target tokens as a reader writes them: joined by ``joiner``, each ``attached`` token (a
        particle) onto the word before it: "고양이 는 집 에서" -> "고양이는 집에서". Special tokens
        are the caller's to leave out; the token views keep the tokens as the model produced them."""
        out: list[str] = []
        for word in words:
            if out and word in self.attached:
                out[-1] += word
            else:
                out.append(word)
        return self.joiner.join(out)

    def generate(self, n: int, seed: int, split: str = "train") -> list[Pair]:
        rng = random.Random(seed)
        return [self.sample(rng, split) for _ in range(n)]


TASKS = {
    "word-order": Task(
        "word-order", word_order.sample_pair, lexicon.source_words, lexicon.target_words, word_order.examples, " ",
        "generated English S-V-O sentences -> Korean word order with particles (transformer.translation.word_order)",
        frozenset(lexicon.PARTICLES),
    ),
    "dates": Task(
        "dates", dates.sample_pair, dates.source_words, dates.target_words, dates.examples, "",
        "generated English dates in 18 formats (10 written, 8 numeric), 1900-2099 (two-digit years 1969-2068) "
        "-> ISO 8601 characters (transformer.translation.dates)",
    ),
}  # fmt: skip


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"Unknown task {name!r}; choose one of {', '.join(TASKS)}.")
    return TASKS[name]
