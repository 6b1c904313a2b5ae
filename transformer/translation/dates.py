"""Written English dates -> ISO 8601 ("saturday the 9th of may 2018" -> "2018-05-09").

The target is read one character at a time; the gold alignment points each digit at the
source word it comes from (year digits at the year, month digits at the month name or
number, day digits at the day), and the two "-" at nothing. Names come from the stdlib
``calendar`` module (English locale). Held-out (year, month) combinations never occur in
training (see :func:`held_out_months`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import random

from .pairs import Pair

FIRST_YEAR, LAST_YEAR = 1950, 2049
HELD_OUT_SHARE = 0.1
HELD_OUT_SEED = 12
MONTHS = tuple(calendar.month_name[m].lower() for m in range(1, 13))
MONTH_ABBR = tuple(calendar.month_abbr[m].lower() for m in range(1, 13))
WEEKDAYS = tuple(calendar.day_name[d].lower() for d in range(7))  # monday first, as date.weekday()

# {W} weekday, {D} day, {O} ordinal day, {M} month name, {A} month abbreviation, {N} month number, {Y} year
FORMATS = (
    "{W} the {O} of {M} {Y}",
    "{D} {M} {Y}",
    "{M} {D} , {Y}",
    "{O} {M} {Y}",
    "{W} , {M} {D} , {Y}",
    "{A} {D} {Y}",
    "the {O} of {M} , {Y}",
    "{D} . {N} . {Y}",
    "{Y} {M} {D}",
    "{W} {D} {A} {Y}",
)


def ordinal(day: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def held_out_months(seed: int = HELD_OUT_SEED) -> frozenset[tuple[int, int]]:
    """The (year, month) combinations kept out of training: a fixed 10 % of all of them."""
    combos = [(y, m) for y in range(FIRST_YEAR, LAST_YEAR + 1) for m in range(1, 13)]
    return frozenset(random.Random(seed).sample(combos, round(HELD_OUT_SHARE * len(combos))))


def make_pair(date: dt.date, fmt: str) -> Pair:
    """The pair for ``date`` written in ``fmt`` (one of :data:`FORMATS`)."""
    values = {
        "W": WEEKDAYS[date.weekday()], "D": str(date.day), "O": ordinal(date.day), "M": MONTHS[date.month - 1],
        "A": MONTH_ABBR[date.month - 1], "N": str(date.month), "Y": str(date.year),
    }  # fmt: skip
    source, where = [], {}
    for word in fmt.split():
        if word.startswith("{"):
            field = word[1]
            where[field] = len(source)
            source.append(values[field])
        else:
            source.append(word)
    year_pos = where["Y"]
    month_pos = next(where[f] for f in "MAN" if f in where)
    day_pos = next(where[f] for f in "DO" if f in where)
    target = tuple(date.isoformat())  # "YYYY-MM-DD"
    alignment = (year_pos,) * 4 + (None,) + (month_pos,) * 2 + (None,) + (day_pos,) * 2
    return Pair(tuple(source), target, alignment)


def sample_pair(rng: random.Random, split: str = "train", held_out: frozenset | None = None) -> Pair:
    """A random date in a random format, from the training or the held-out (year, month) combinations."""
    held_out = held_out_months() if held_out is None else held_out
    while True:
        year, month = rng.randint(FIRST_YEAR, LAST_YEAR), rng.randint(1, 12)
        if ((year, month) in held_out) == (split == "test"):
            break
    day = rng.randint(1, calendar.monthrange(year, month)[1])
    return make_pair(dt.date(year, month, day), rng.choice(FORMATS))


def generate(n: int, seed: int, split: str = "train") -> list[Pair]:
    rng, held_out = random.Random(seed), held_out_months()
    return [sample_pair(rng, split, held_out) for _ in range(n)]


def source_words() -> list[str]:
    numbers = [str(n) for n in range(1, 32)] + [ordinal(n) for n in range(1, 32)]
    years = [str(y) for y in range(FIRST_YEAR, LAST_YEAR + 1)]
    return sorted(set(MONTHS + MONTH_ABBR + WEEKDAYS) | set(numbers + years) | {"the", "of", ",", "."})


def target_words() -> list[str]:
    return list("0123456789-")


def examples() -> list[Pair]:
    """Hand-picked dates for the page."""
    return [
        make_pair(dt.date(2018, 5, 9), FORMATS[0]),
        make_pair(dt.date(1969, 7, 20), FORMATS[2]),
        make_pair(dt.date(2001, 9, 11), FORMATS[7]),
        make_pair(dt.date(1995, 12, 25), FORMATS[9]),
        make_pair(dt.date(2024, 2, 29), FORMATS[6]),
    ]
