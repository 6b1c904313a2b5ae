"""Written and numeric English dates -> ISO 8601 ("saturday the 9th of may 2018" -> "2018-05-09",
"03.03.2021" -> "2021-03-03", "3/3/21" -> "2021-03-03").

The source is read with the "digits" tokenizer (``basic_english`` words cut into single digits,
letter runs and symbols: "2021/3/3" -> 2 0 2 1 / 3 / 3), so every year 1900-2099 and every
separator is made of known tokens. The target is read one character at a time; the gold
alignment points each copied digit at the source digit it comes from, month digits at the
month name when the month is written out, and the century of a two-digit year and the two "-"
at nothing. Numeric conventions: year first is Y/M/D, dots are D.M.Y, slashes with the year last
are the American M/D/Y; a two-digit year follows POSIX ``strptime`` (69-99 -> 1969-1999,
00-68 -> 2000-2068). Names come from the stdlib ``calendar`` module (English locale).
Held-out (year, month) combinations never occur in training (see :func:`held_out_months`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.tokenizer import NUMBER_GAP, basic_english_digits
from .pairs import Pair

FIRST_YEAR, LAST_YEAR = 1900, 2099
TWO_DIGIT_YEARS = (1969, 2068)  # POSIX %y: 69-99 -> 19xx, 00-68 -> 20xx
HELD_OUT_SHARE = 0.1
HELD_OUT_SEED = 12
MONTHS = tuple(calendar.month_name[m].lower() for m in range(1, 13))
MONTH_ABBR = tuple(calendar.month_abbr[m].lower() for m in range(1, 13))
WEEKDAYS = tuple(calendar.day_name[d].lower() for d in range(7))  # monday first, as date.weekday()
SUFFIXES = ("st", "nd", "rd", "th")
SEPARATORS = (",", ".", "-", "/", "'")

# {W} weekday, {D} day, {DD} day with a leading zero, {O} ordinal day, {M} month name,
# {A} month abbreviation, {N} month number, {NN} with a leading zero, {Y} year, {YY} two-digit year
WRITTEN = (
    "{W} the {O} of {M} {Y}",
    "{D} {M} {Y}",
    "{M} {D} , {Y}",
    "{O} {M} {Y}",
    "{W} , {M} {D} , {Y}",
    "{A} {D} {Y}",
    "the {O} of {M} , {Y}",
    "{Y} {M} {D}",
    "{W} {D} {A} {Y}",
    "{A} {D} '{YY}",
)
NUMERIC = (
    "{Y}-{NN}-{DD}",
    "{Y}/{N}/{D}",
    "{Y}/{NN}/{DD}",
    "{D}.{N}.{Y}",
    "{DD}.{NN}.{Y}",
    "{DD}.{NN}.{YY}",
    "{N}/{D}/{Y}",
    "{NN}/{DD}/{YY}",
)
FORMATS = WRITTEN + NUMERIC
_FIELD = re.compile(r"\{(\w+)\}")


def ordinal(day: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def two_digit_year(yy: int) -> int:
    """The year a two-digit year means (POSIX ``strptime``): 69 -> 1969, 68 -> 2068."""
    return 1900 + yy if yy >= 69 else 2000 + yy


def held_out_months(seed: int = HELD_OUT_SEED) -> frozenset[tuple[int, int]]:
    """The (year, month) combinations kept out of training: a fixed 10 % of all of them."""
    combos = [(y, m) for y in range(FIRST_YEAR, LAST_YEAR + 1) for m in range(1, 13)]
    return frozenset(random.Random(seed).sample(combos, round(HELD_OUT_SHARE * len(combos))))


def _values(date: dt.date) -> dict[str, str]:
    return {
        "W": WEEKDAYS[date.weekday()], "D": str(date.day), "DD": f"{date.day:02d}", "O": ordinal(date.day),
        "M": MONTHS[date.month - 1], "A": MONTH_ABBR[date.month - 1], "N": str(date.month),
        "NN": f"{date.month:02d}", "Y": str(date.year), "YY": f"{date.year % 100:02d}",
    }  # fmt: skip


def _two_chars(positions: Sequence[int], named: bool) -> list[int | None]:
    """Sources of the two target characters of a month or day: the name for both, else each digit
    (a one-digit value's leading "0" comes from nowhere)."""
    if named:
        return [positions[0]] * 2
    return list(positions) if len(positions) == 2 else [None, positions[0]]


def make_pair(date: dt.date, fmt: str) -> Pair:
    """The pair for ``date`` written in ``fmt`` (one of :data:`FORMATS`)."""
    if "{YY}" in fmt and not TWO_DIGIT_YEARS[0] <= date.year <= TWO_DIGIT_YEARS[1]:
        raise ValueError(f"{date.year} cannot be written with two digits (they mean {TWO_DIGIT_YEARS}).")
    values, where, written = _values(date), {}, ""
    for k, piece in enumerate(_FIELD.split(fmt)):
        if k % 2:  # a field: its tokens are those the text gains with it (a number gap excepted)
            before = len(basic_english_digits(written))
            tokens = basic_english_digits(written + values[piece])
            where[piece] = [i for i in range(before, len(tokens)) if tokens[i] != NUMBER_GAP]
            written += values[piece]
        else:
            written += piece
    source = basic_english_digits(written)
    year = where["Y"] if "Y" in where else [None, None, *where["YY"]]
    month_field = next(f for f in ("M", "A", "N", "NN") if f in where)
    day_field = next(f for f in ("D", "DD", "O") if f in where)
    month = _two_chars(where[month_field], month_field in ("M", "A"))
    day = _two_chars([p for p in where[day_field] if source[p].isdigit()], False)
    alignment = (*year, None, *month, None, *day)
    return Pair(tuple(source), tuple(date.isoformat()), alignment, written)  # target "YYYY-MM-DD"


def sample_pair(rng: random.Random, split: str = "train", held_out: frozenset | None = None) -> Pair:
    """A random date in a random format, from the training or the held-out (year, month) combinations."""
    return sample_in_format(rng, rng.choice(FORMATS), split, held_out)


def sample_in_format(rng: random.Random, fmt: str, split: str = "train", held_out: frozenset | None = None) -> Pair:
    """:func:`sample_pair` with the format fixed (for per-format scores)."""
    held_out = held_out_months() if held_out is None else held_out
    first, last = TWO_DIGIT_YEARS if "{YY}" in fmt else (FIRST_YEAR, LAST_YEAR)
    while True:
        year, month = rng.randint(first, last), rng.randint(1, 12)
        if ((year, month) in held_out) == (split == "test"):
            break
    return make_pair(dt.date(year, month, rng.randint(1, calendar.monthrange(year, month)[1])), fmt)


def generate(n: int, seed: int, split: str = "train") -> list[Pair]:
    rng, held_out = random.Random(seed), held_out_months()
    return [sample_pair(rng, split, held_out) for _ in range(n)]


def source_words() -> list[str]:
    words = set(MONTHS + MONTH_ABBR + WEEKDAYS + SUFFIXES + SEPARATORS) | {"the", "of", NUMBER_GAP}
    return sorted(words | set("0123456789"))


def target_words() -> list[str]:
    return list("0123456789-")


def examples() -> list[Pair]:
    """Hand-picked dates for the page."""
    return [
        make_pair(dt.date(2018, 5, 9), FORMATS[0]),
        make_pair(dt.date(1969, 7, 20), "{M} {D} , {Y}"),
        make_pair(dt.date(2021, 3, 3), "{Y}-{NN}-{DD}"),
        make_pair(dt.date(2021, 3, 3), "{Y}/{N}/{D}"),
        make_pair(dt.date(2021, 3, 3), "{DD}.{NN}.{Y}"),
        make_pair(dt.date(2001, 9, 11), "{D}.{N}.{Y}"),
        make_pair(dt.date(1995, 12, 25), "{W} {D} {A} {Y}"),
        make_pair(dt.date(2024, 2, 29), "the {O} of {M} , {Y}"),
        make_pair(dt.date(1912, 4, 15), "{O} {M} {Y}"),
        make_pair(dt.date(2021, 3, 3), "{NN}/{DD}/{YY}"),
    ]


@dataclass(frozen=True)
class Reading:
    """What the rules of this module read in a tokenised date: the numbers (None where a field
    is missing) and the source positions of each field (a month name is one position)."""

    year: int
    month: int
    day: int
    year_positions: tuple[int | None, ...]  # four, the century's None for a two-digit year
    month_positions: tuple[int, ...]
    day_positions: tuple[int, ...]
    month_named: bool

    def is_real(self) -> bool:
        """Whether year-month-day is a date on the calendar (no 30 February, no month 13)."""
        return 1 <= self.month <= 12 and 1 <= self.day <= calendar.monthrange(self.year, self.month)[1]

    def alignment(self) -> list[int | None]:
        """The source position of each character of "YYYY-MM-DD"."""
        month = _two_chars(self.month_positions, self.month_named)
        day = _two_chars(self.day_positions, False)
        return [*self.year_positions, None, *month, None, *day]


def _digit_groups(tokens: Sequence[str]) -> list[list[int]]:
    """Positions of each run of consecutive one-digit tokens."""
    groups: list[list[int]] = []
    for i, tok in enumerate(tokens):
        if len(tok) == 1 and tok.isdigit():
            if groups and groups[-1][-1] == i - 1:
                groups[-1].append(i)
            else:
                groups.append([i])
    return groups


def _number(tokens: Sequence[str], group: list[int]) -> int:
    return int("".join(tokens[i] for i in group))


def read_date(tokens: Sequence[str]) -> Reading | None:
    """The date that ``tokens`` (from the "digits" tokenizer) spell by this module's conventions,
    or None when they spell no date: a year (4 digits, or 2 after "'" or in an all-numeric date)
    and a day, with a month name or a third number."""
    groups = [g for g in _digit_groups(tokens) if len(g) <= 4]
    named = [i for i, w in enumerate(tokens) if w in MONTHS or w in MONTH_ABBR]
    if len(named) > 1 or len(groups) != 3 - len(named) or len(groups) < 2:
        return None
    if named:
        year = next((g for g in groups if len(g) == 4 or (len(g) == 2 and g[0] > 0 and tokens[g[0] - 1] == "'")), None)
        day = next((g for g in groups if g is not year), None)
        if year is None or day is None or len(day) > 2:
            return None
        month_positions, month = (named[0],), _month_number(tokens[named[0]])
    else:
        if len(groups[0]) == 4:
            year, month_group, day = groups
        elif tokens[groups[0][-1] + 1] == ".":
            day, month_group, year = groups
        else:
            month_group, day, year = groups
        if len(year) not in (2, 4) or len(month_group) > 2 or len(day) > 2:
            return None
        month_positions, month = tuple(month_group), _number(tokens, month_group)
    value = _number(tokens, year)
    year_positions = tuple(year) if len(year) == 4 else (None, None, *year)
    return Reading(
        two_digit_year(value) if len(year) == 2 else value, month, _number(tokens, day),
        year_positions, month_positions, tuple(day), bool(named),
    )  # fmt: skip


def _month_number(word: str) -> int:
    return (MONTHS.index(word) if word in MONTHS else MONTH_ABBR.index(word)) + 1
