"""Short labelled sentences about negation and contrast, written from templates, added to sentiment training.

IMDB's long reviews and SST-2's 6,920 sentences hold too few short "not bad" or "boring, but …" cases for a
small model to learn that ``not`` flips the word after it and that the clause after ``but`` decides. These
sentences teach exactly that, and nothing else:

- plain: "the acting was great" -> positive;
- negated: "the acting was not great", "not a good film", "i did not enjoy it" -> the other label;
- contrast: "<clause> but <clause>", "although <clause>, <clause>", "i expected it to be dull but it was
  gripping" -> the label of the second clause (each clause plain or negated).

The word lists are ours, chosen as common review words of clear polarity. ``HELD_OUT`` words never appear in
a generated sentence, so a probe that uses them measures whether the rule was learned, not the phrase.
"""

from __future__ import annotations

import random

from ..datasets.imdb import Example

__all__ = ["HELD_OUT", "contrast_sentences"]

POSITIVE = (
    "good", "great", "wonderful", "excellent", "brilliant", "enjoyable", "fun", "funny", "beautiful", "moving",
    "amazing", "fantastic", "charming", "clever", "impressive", "entertaining", "gripping", "touching", "superb",
    "delightful", "engaging", "memorable", "thrilling", "lovely", "smart", "strong", "fresh", "powerful",
)  # fmt: skip
NEGATIVE = (
    "bad", "terrible", "boring", "awful", "dull", "poor", "weak", "horrible", "stupid", "disappointing",
    "predictable", "tedious", "annoying", "bland", "messy", "forgettable", "painful", "pointless", "silly", "lame",
    "mediocre", "clumsy", "flat", "confusing", "lazy", "cheap", "ugly", "overlong",
)  # fmt: skip
# words kept out of every generated sentence, for probes that test the rule on unseen words
HELD_OUT = ("wonderful", "dreadful", "superb", "tiresome", "stunning", "awful", "boring", "great")
SUBJECTS = (
    "the movie", "the film", "the plot", "the acting", "the story", "the script", "the ending", "the cast",
    "the dialogue", "the direction", "the music", "the characters", "the pacing", "the first half",
    "the lead actor", "the effects", "the camera work", "the humour", "this show", "the sequel", "it",
    "the performances", "the soundtrack", "the second act",
)  # fmt: skip
NOUNS = ("movie", "film", "story", "script", "performance", "ending", "show", "sequel", "plot", "cast")
LIKE = ("like", "enjoy", "love", "recommend")
NOT_DO = ("did not", "didn't", "could not", "can't", "would not", "do not")
INTENSIFIERS = ("", "", "", "really ", "very ", "so ", "truly ", "pretty ")


def _adjective(rng: random.Random, positive: bool) -> str:
    words = [w for w in (POSITIVE if positive else NEGATIVE) if w not in HELD_OUT]
    return rng.choice(words)


def _verb(subject: str) -> str:
    return "were" if subject in ("the characters", "the effects", "the performances") else "was"


def _clause(rng: random.Random, positive: bool) -> str:
    """A clause whose sentiment is ``positive``: plain, or a negated clause of the other polarity."""
    subject = rng.choice(SUBJECTS)
    verb = _verb(subject)
    kind = rng.randrange(6)
    if kind <= 2:
        return f"{subject} {verb} {rng.choice(INTENSIFIERS)}{_adjective(rng, positive)}"
    other = _adjective(rng, not positive)
    if kind == 3:
        return f"{subject} {verb} not {other}"
    if kind == 4:
        return f"{subject} {verb}n't {rng.choice(('', 'very ', 'that ', 'really '))}{other}"
    return f"{subject} {verb} not {other} at all" if not positive else f"{subject} {verb} never {other}"


def _negated(rng: random.Random, positive: bool) -> str:
    """A sentence whose sentiment is ``positive`` built with a negation."""
    kind = rng.randrange(5)
    other = _adjective(rng, not positive)
    if kind == 0:
        return f"not {rng.choice(('a', 'a very', 'a particularly'))} {other} {rng.choice(NOUNS)}"
    if kind == 1:
        return f"not {other}" + rng.choice(("", " at all", ", not " + _adjective(rng, not positive)))
    if kind == 2:
        what = rng.choice(("it", "this film", "the movie", "this one"))
        if positive:
            return f"i {rng.choice(('really ', '', 'truly '))}{rng.choice(('liked', 'enjoyed', 'loved'))} {what}"
        return f"i {rng.choice(NOT_DO)} {rng.choice(LIKE)} {what}"
    return _clause(rng, positive)


def _contrast(rng: random.Random, positive: bool) -> str:
    """Two clauses of opposite sentiment; the second one carries ``positive``."""
    first, second = _clause(rng, not positive), _clause(rng, positive)
    kind = rng.randrange(4)
    if kind == 0:
        return f"{first} but {second}"
    if kind == 1:
        return f"although {first}, {second}"
    if kind == 2:
        return f"{first}, however {second}"
    expected, found = _adjective(rng, not positive), _adjective(rng, positive)
    thought = rng.choice(("expected it to be", "thought it would be"))
    return f"i {thought} {expected} but it was {found}"


def contrast_sentences(count: int, seed: int) -> list[Example]:
    """``count`` labelled sentences, balanced, a third each plain-or-negated, negated, and contrast."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        positive = i % 2 == 0
        make = (_clause, _negated, _contrast)[rng.randrange(3)]
        out.append(Example(make(rng, positive), int(positive)))
    rng.shuffle(out)
    return out
