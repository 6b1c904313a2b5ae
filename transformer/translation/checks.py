"""Whether a translation can be trusted: inputs the model never learned to read, and outputs that
cannot be right, each named in a :class:`Problem` instead of a confident answer.

- dates: words outside the vocabulary, an input that spells no date by the task's conventions
  (:func:`dates.read_date`), a year outside 1900-2099, an input or an output that is not a day on
  the calendar (30 February, month 13), an output that differs from what the input's numbers say;
- word order: words outside the vocabulary, and sentences outside the generated grammar
  ``[time] the|a [adjective] noun verb the|a [adjective] noun [place] [time]`` (extra words,
  shuffled order), naming the first word that does not fit.

``Problem.code`` and its fields let a page write the message in its own language;
``Problem.english()`` is the sentence the CLI prints.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import dates
from . import lexicon as lx

GRAMMAR = "[time] the|a [adjective] noun verb the|a [adjective] noun [place] [time]"
EXPECTED = {
    "article": "'the' or 'a'", "adjective-or-noun": "an adjective or a noun", "noun": "a noun", "verb": "a verb",
    "place": "a place such as 'in the park'", "end": "the end of the sentence",
}  # fmt: skip
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Problem:
    """code: unknown_words | not_a_date | year_range | impossible_input | impossible_output |
    disagrees | outside_grammar | incomplete; words: the words concerned; position: 1-based word
    number (outside_grammar); expected: what the grammar wanted there (article, adjective-or-noun,
    noun, verb, place, end); output: the model's answer; reading: what the input's numbers say."""

    code: str
    words: tuple[str, ...] = ()
    position: int = 0
    expected: str = ""
    output: str = ""
    reading: str = ""

    def english(self) -> str:
        words = ", ".join(f"'{w}'" for w in self.words)
        return {
            "unknown_words": f"Outside what this model learned: it has never seen {words}; the translation is "
            "unreliable.",
            "not_a_date": "This does not look like a date the model learned to read (a day, a month as a name "
            "or a number, and a year)"
            + (f"; it has never seen {words}" if words else "")
            + ": the output is not a date you can trust.",
            "year_range": f"The year {words} is outside 1900-2099, the years this model learned: the output is "
            "unreliable.",
            "impossible_input": f"The input is not a real calendar date ({self.reading} does not exist): the "
            "model's answer cannot be right.",
            "impossible_output": f"The model wrote {self.output!r}, which is not a real calendar date: do not use it.",
            "disagrees": f"The model wrote {self.output}, but the input's numbers say {self.reading}: the "
            "translation is unreliable.",
            "outside_grammar": f"Outside what this model learned: word {self.position} ({words}) does not fit the "
            f"sentences it was trained on ({GRAMMAR}; here it expected {EXPECTED.get(self.expected)}); the translation is "
            "unreliable.",
            "incomplete": f"Outside what this model learned: the sentence stops where the grammar ({GRAMMAR}) "
            f"expects {EXPECTED.get(self.expected)}; the translation is unreliable.",
        }[self.code]


@dataclass(frozen=True)
class Verdict:
    """The problems found (none: nothing says the translation is wrong)."""

    problems: tuple[Problem, ...] = ()

    @property
    def reliable(self) -> bool:
        return not self.problems

    def messages(self) -> list[str]:
        return [p.english() for p in self.problems]

    def record(self, output: str) -> dict:
        """The CLI's ``translation`` entry: the output, whether it is reliable and why not."""
        problems = [{"code": p.code, "message": p.english(), "words": list(p.words)} for p in self.problems]
        return {"text": output, "reliable": self.reliable, "problems": problems}


def check(task: str, tokens: Sequence[str], unknown: Sequence[bool], output: str | None = None) -> Verdict:
    """The problems of translating ``tokens`` (as the model read them; ``unknown`` flags words
    outside its vocabulary) into ``output`` (None: check the input only) for task ``task``."""
    if task == "dates":
        return Verdict(tuple(date_problems(tokens, unknown, output)))
    if task == "word-order":
        return Verdict(tuple(word_order_problems(tokens, unknown)))
    raise ValueError(f"Unknown task {task!r}: use 'dates' or 'word-order'.")


def _unknown(tokens: Sequence[str], unknown: Sequence[bool]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(w for w, u in zip(tokens, unknown) if u))


def date_problems(tokens: Sequence[str], unknown: Sequence[bool], output: str | None) -> list[Problem]:
    problems = []
    strangers = _unknown(tokens, unknown)
    reading = dates.read_date(tokens)
    if reading is None:
        problems.append(Problem("not_a_date", strangers))
    elif strangers:
        problems.append(Problem("unknown_words", strangers))
    if reading is not None and not dates.FIRST_YEAR <= reading.year <= dates.LAST_YEAR:
        problems.append(Problem("year_range", (str(reading.year),)))
    elif reading is not None and not reading.is_real():
        problems.append(Problem("impossible_input", reading=_iso(reading.year, reading.month, reading.day)))
    if output is None:
        return problems
    if not _real_date(output):
        problems.append(Problem("impossible_output", output=output))
    elif reading is not None and reading.is_real() and output != _iso(reading.year, reading.month, reading.day):
        problems.append(Problem("disagrees", output=output, reading=_iso(reading.year, reading.month, reading.day)))
    return problems


def _iso(year: int, month: int, day: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}"


def _real_date(text: str) -> bool:
    if not ISO_DATE.fullmatch(text):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def word_order_problems(tokens: Sequence[str], unknown: Sequence[bool]) -> list[Problem]:
    strangers = _unknown(tokens, unknown)
    if strangers:
        return [Problem("unknown_words", strangers)]
    stop = grammar_stop(tokens)
    if stop is None:
        return []
    position, expected = stop
    if position >= len(tokens):
        return [Problem("incomplete", expected=expected)]
    return [Problem("outside_grammar", (tokens[position],), position + 1, expected)]


_NOUNS = frozenset(e for e, _ in lx.NOUNS)
_VERBS = frozenset(e for e, _ in lx.VERBS)
_ADJECTIVES = frozenset(e for e, _ in lx.ADJECTIVES)
_TIMES = frozenset(e for e, _ in lx.TIMES)
_PLACES = {(prep, with_the, noun) for prep, with_the, noun, _ in lx.PLACES}


def grammar_stop(words: Sequence[str]) -> tuple[int, str] | None:
    """None when ``words`` is a sentence of the task's grammar (:data:`GRAMMAR`), else (0-based
    position of the first word that does not fit, or len(words) when the sentence stops early,
    what the grammar expected there)."""
    pos, n = 0, len(words)

    def take(allowed) -> bool:
        nonlocal pos
        if pos < n and words[pos] in allowed:
            pos += 1
            return True
        return False

    time_first = take(_TIMES)
    for role in ("subject", "object"):
        if not take(lx.ARTICLES):
            return pos, "article"
        if not take(_ADJECTIVES) and pos < n and words[pos] not in _NOUNS:
            return pos, "adjective-or-noun"
        if not take(_NOUNS):
            return pos, "noun"
        if role == "subject" and not take(_VERBS):
            return pos, "verb"
    if pos < n and words[pos] in {p for p, _, _ in _PLACES}:
        prep, with_the = words[pos], pos + 1 < n and words[pos + 1] == "the"
        pos += 1 + with_the
        if pos >= n or (prep, with_the, words[pos]) not in _PLACES:
            return pos, "place"
        pos += 1
    if not time_first:
        take(_TIMES)
    return (pos, "end") if pos < n else None


def translation_record(task: str | None, tokens, unknown, decoder_tokens, greedy: bool) -> dict | None:
    """The ``translation`` entry of a CLI record for a model trained on ``task`` (its metrics.json
    says which; None for other models): the output text, ``reliable`` and the problems. The output
    is checked only when the model wrote it (``greedy``), not when it was given (``--target``)."""
    from .tasks import TASKS

    if task not in TASKS:
        return None
    words = [w for w in decoder_tokens if w not in ("<bos>", "<eos>", "<pad>")]
    output = TASKS[task].joiner.join(words)
    return check(task, tokens, unknown, output if greedy else None).record(output)
