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

__all__ = [
    "HELD_OUT",
    "comma_contrast_sentences",
    "contrast_sentences",
    "lukewarm_sentences",
    "number_sentences",
]

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


# --- everyday forms (issue 50, item 9): scores, contrasts without "but", lukewarm verdicts --------------------
# None of these writes a sentence of bench/data/everyday_en.tsv (tests/test_everyday_en.py checks it): its
# tails are neutral or built from the clauses above, never its phrases ("would not recommend", "save your money").
NEUTRAL_TAILS = (
    "saw it last night", "watched it with friends", "just my opinion", "that's my verdict", "saw it on a plane",
    "went in blind", "watched it at home", "caught it on tv", "that's all", "for what it's worth",
    "saw it in the cinema", "watched it with my family", "my honest rating", "first time watching",
)  # fmt: skip
TEN_POSITIVE = ("7", "7.5", "8", "8.5", "9", "9.5", "10")
TEN_NEGATIVE = ("0", "1", "1.5", "2", "2.5", "3", "3.5", "4")
FIVE_POSITIVE = ("4", "4.5", "5")
FIVE_NEGATIVE = ("0", "0.5", "1", "1.5", "2")
STAR_WORDS = {"zero": 0, "one": 1, "two": 2, "four": 1, "five": 1, "half a": 0}  # 1: positive, 0: negative
LUKEWARM_WORDS = ("okay", "ok", "fine", "alright", "average", "so-so", "passable", "middling")
LUKEWARM_HEDGES = ("", "", ", i guess", ", i suppose", " overall", ", more or less", " i think")


def _score(rng: random.Random, positive: bool) -> str:
    """A score whose verdict is ``positive``: "8/10", "2 out of 5", "four stars", ..."""
    kind = rng.randrange(4)
    if kind == 0:
        n = rng.choice(TEN_POSITIVE if positive else TEN_NEGATIVE)
        return rng.choice((f"{n}/10", f"{n} out of 10", f"{n} / 10", f"a {n} out of 10"))
    if kind == 1:
        n = rng.choice(FIVE_POSITIVE if positive else FIVE_NEGATIVE)
        return rng.choice((f"{n}/5", f"{n} out of 5", f"{n} stars" if n != "1" else "1 star"))
    if kind == 2:
        word = rng.choice([w for w, p in STAR_WORDS.items() if p == positive])
        return f"{word} star" if word in ("one", "half a") else f"{word} stars"
    n = rng.choice(FIVE_POSITIVE if positive else FIVE_NEGATIVE)
    return f"{n} stars" if n != "1" else "1 star"


def number_sentences(count: int, seed: int) -> list[Example]:
    """``count`` balanced sentences whose label is their score's ("9/10", "2 stars"; 5-6/10 and 3/5 never
    used). The text beside the score is neutral, of the same sentiment, or (one in five) of the other:
    a score decides a review ("2/10, the music was good" is negative)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        positive = i % 2 == 0
        score = _score(rng, positive)
        kind = rng.randrange(10)
        if kind < 3:
            text = rng.choice((score, f"i give it {score}", f"i'd give it {score}", f"rating: {score}",
                               f"{score} for this one"))  # fmt: skip
        elif kind < 6:
            tail = rng.choice(NEUTRAL_TAILS)
            text = rng.choice((f"{score}, {tail}", f"{tail}. {score}", f"{score} - {tail}"))
        else:
            clause = _clause(rng, positive if kind < 8 else not positive)
            text = rng.choice((f"{score}, {clause}", f"{clause}. {score}", f"{score}. {clause}"))
        out.append(Example(text, int(positive)))
    rng.shuffle(out)
    return out


def comma_contrast_sentences(count: int, seed: int) -> list[Example]:
    """``count`` balanced contrasts without "but": two clauses of opposite sentiment, the second one
    deciding ("the plot was dull, the ending was gripping" -> positive; "..., still ...", "...; ...")."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        positive = i % 2 == 0
        first, second = _clause(rng, not positive), _clause(rng, positive)
        form = rng.choice(("{a}, {b}", "{a}. {b}", "{a}; {b}", "{a}, yet {b}", "{a}, still {b}",
                           "{a}, {b} overall", "{a}, {b} anyway", "{a}. in the end {b}"))  # fmt: skip
        out.append(Example(form.format(a=first, b=second), int(positive)))
    rng.shuffle(out)
    return out


def lukewarm_sentences(count: int, seed: int) -> list[str]:
    """``count`` verdicts with no clear label ("the movie was okay, i guess", "5/10", "3 stars",
    "not great, not terrible"): trained towards 50/50, so the model learns to be unsure there."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.randrange(4)
        if kind == 0:
            subject = rng.choice(SUBJECTS)
            text = f"{subject} {_verb(subject)} {rng.choice(LUKEWARM_WORDS)}{rng.choice(LUKEWARM_HEDGES)}"
        elif kind == 1:
            start = rng.choice(("an average", "a pretty average", "an okay", "a so-so", "a perfectly fine"))
            text = f"{start} {rng.choice(NOUNS)}{rng.choice(LUKEWARM_HEDGES)}"
        elif kind == 2:
            score = rng.choice(("5/10", "5 out of 10", "6/10", "3/5", "3 out of 5", "3 stars", "2.5 stars",
                                "three stars", "5.5/10"))  # fmt: skip
            text = rng.choice((score, f"{score}, {rng.choice(NEUTRAL_TAILS)}", f"i give it {score}"))
        else:
            good, bad = _adjective(rng, True), _adjective(rng, False)
            text = rng.choice((f"not {good}, not {bad}", f"not {bad}, not {good} either", f"neither {good} nor {bad}"))
        out.append(text)
    return out
