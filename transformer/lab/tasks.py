"""The toy tasks a small decoder-only Transformer learns live: copy, reverse, sort and induction.

Every task writes rows of token ids for next-token training, with a mask of the predictions that
count (the answer; the random input itself cannot be predicted):

* copy / reverse / sort: ``<start> x1 .. xn > y1 .. yn`` where y is x, x reversed or x sorted;
  the answer is y (n predictions, each made at the token before it).
* induction: ``<start> r .. s1 .. sk r .. s1 .. sk r ..``: a random span of k in [n/2, n] symbols
  written twice, up to n random symbols apart, at a random place among random filler; the answer is
  s2 .. sk of the second copy (s1 there follows nothing that says it, so it is not counted). With
  the span's length, place and the gap random, no fixed look back finds the answer: a model gets it
  right by finding where the token it reads appeared before and copying what followed it, which is
  what an induction head does.

Held-out sequences: a fixed fraction of all inputs (chosen by a hash of the symbols, the same on
every run and machine) is kept for evaluation and never drawn for training.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

TASKS = ("copy", "reverse", "sort", "induction")
UNK, PAD, START, SEP = "<unk>", "<pad>", "<|endoftext|>", ">"
SPECIALS = (UNK, PAD, START, SEP)  # ids 0..3; the symbols follow
START_ID, SEP_ID, FIRST_SYMBOL = 2, 3, 4
ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
HELD_OUT_FRACTION = 1 / 32
MIN_HELD_OUT = 8  # distinct held-out inputs a task needs: fewer measure nothing (and none cannot be drawn)
COUNTED_UP_TO = 2**18  # inputs counted one by one up to this many; beyond it a 1/32 share is thousands
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Batch:
    """rows (B, T) int64 ids; answer (B, T-1) bool: which next-token predictions count
    (prediction i is made at token i and scored against token i+1)."""

    rows: np.ndarray
    answer: np.ndarray


@dataclass(frozen=True)
class Task:
    """One task at a sequence length and an alphabet size."""

    name: str
    length: int
    symbols: int

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise ValueError(f"Unknown task {self.name!r}; choose one of {', '.join(TASKS)}.")
        if not 2 <= self.length <= 32:
            raise ValueError(f"length must be between 2 and 32 (got {self.length}).")
        if not 2 <= self.symbols <= len(ALPHABET):
            raise ValueError(f"symbols must be between 2 and {len(ALPHABET)} (got {self.symbols}).")
        shortage = held_out_shortage(self.length, self.symbols)
        if shortage is not None:
            raise TooFewHeldOut(shortage)

    @property
    def vocab(self) -> list[str]:
        """Tokens in id order: the specials, then the symbols."""
        return [*SPECIALS, *ALPHABET[: self.symbols]]

    @property
    def vocab_size(self) -> int:
        return len(SPECIALS) + self.symbols

    @property
    def row_length(self) -> int:
        """Tokens per row: 2n + 2 for copy/reverse/sort, 3n + 1 for induction (room for a gap and to move the span)."""
        return 3 * self.length + 1 if self.name == "induction" else 2 * self.length + 2

    @property
    def min_span(self) -> int:
        return max(2, self.length // 2)

    def sample(self, rng: np.random.Generator, batch: int, held_out: bool = False) -> Batch:
        """``batch`` rows whose inputs are all training inputs (or, with ``held_out``, all held-out ones)."""
        inputs = draw_inputs(rng, batch, self.length, self.symbols, held_out)
        if self.name == "induction":
            return self._induction_rows(rng, inputs)
        return self._answer_rows(inputs)

    def _answer_rows(self, inputs: np.ndarray) -> Batch:
        answers = {"copy": inputs, "reverse": inputs[:, ::-1], "sort": np.sort(inputs, axis=1)}[self.name]
        b, n = inputs.shape
        rows = np.concatenate(
            [np.full((b, 1), START_ID), inputs + FIRST_SYMBOL, np.full((b, 1), SEP_ID), answers + FIRST_SYMBOL], axis=1
        )
        answer = np.zeros((b, 2 * n + 1), dtype=bool)
        answer[:, n + 1 :] = True  # the predictions made at '>' and at y1 .. y(n-1)
        return Batch(rows.astype(np.int64), answer)

    def _induction_rows(self, rng: np.random.Generator, spans: np.ndarray) -> Batch:
        b, n = spans.shape
        k = rng.integers(self.min_span, n + 1, size=b)  # each row's span length
        gap = rng.integers(0, n + 1, size=b)  # random symbols between the two copies
        first = 1 + rng.integers(0, self.row_length - 2 * k - gap)  # where each row's span starts
        rows = np.empty((b, self.row_length), dtype=np.int64)
        rows[:, 0] = START_ID
        rows[:, 1:] = rng.integers(0, self.symbols, size=(b, self.row_length - 1)) + FIRST_SYMBOL  # filler
        answer = np.zeros((b, self.row_length - 1), dtype=bool)
        for i in range(b):
            span, a, c = spans[i, : k[i]] + FIRST_SYMBOL, first[i], first[i] + k[i] + gap[i]
            rows[i, a : a + k[i]] = span
            rows[i, c : c + k[i]] = span
            answer[i, c : c + k[i] - 1] = True  # made at copy tokens s1 .. s(k-1), scored on s2 .. sk
        return Batch(rows, answer)

    def example(self, seed: int = 0) -> Batch:
        """One fixed held-out row (the full-length span for induction): what the page draws attention on."""
        rng = np.random.default_rng([seed, 7])
        if self.name != "induction":
            return self.sample(rng, 1, held_out=True)
        n, span = self.length, draw_inputs(rng, 1, self.length, self.symbols, held_out=True)[0] + FIRST_SYMBOL
        filler = rng.integers(0, self.symbols, size=self.row_length - 1 - 2 * n) + FIRST_SYMBOL
        rows = np.concatenate([[START_ID], span, span, filler])[None, :].astype(np.int64)
        answer = np.zeros((1, self.row_length - 1), dtype=bool)
        answer[0, n + 1 : 2 * n] = True
        return Batch(rows, answer)

    def tokens(self, row: np.ndarray) -> list[str]:
        vocab = self.vocab
        return [vocab[int(i)] for i in row]


class TooFewHeldOut(ValueError):
    """Settings whose inputs leave fewer than MIN_HELD_OUT held-out sequences; ``fields`` holds the numbers
    (symbols, length, total, held_out, need) a message in any language shows."""

    def __init__(self, fields: dict) -> None:
        self.fields = fields
        super().__init__(
            f"{fields['symbols']} symbols at length {fields['length']} make {fields['total']:,} different sequences, "
            f"of which {fields['held_out']} are held out for measuring (at least {fields['need']} are needed): "
            "use more symbols or longer sequences."
        )


@functools.lru_cache(maxsize=256)
def held_out_count(length: int, symbols: int) -> int | None:
    """How many of the symbols ** length inputs are held out (exact); None when there are more than
    COUNTED_UP_TO inputs (then about 1/32 of them: thousands)."""
    total = symbols**length
    if total > COUNTED_UP_TO:
        return None
    every = np.indices((symbols,) * length).reshape(length, -1).T  # (total, length), every input once
    return int(is_held_out(every).sum())


def held_out_shortage(length: int, symbols: int) -> dict | None:
    """None when ``symbols`` at ``length`` leave enough held-out inputs (MIN_HELD_OUT), else the numbers
    that say why not: {symbols, length, total, held_out, need}. Pure: the same answer on every machine."""
    held = held_out_count(length, symbols)
    if held is None or held >= MIN_HELD_OUT:
        return None
    return {"symbols": symbols, "length": length, "total": symbols**length, "held_out": held, "need": MIN_HELD_OUT}


def is_held_out(inputs: np.ndarray) -> np.ndarray:
    """(B, n) symbol indices -> (B,) bool: the inputs kept for evaluation (about HELD_OUT_FRACTION).

    A multiplicative hash of the symbols, so the split is the same on every run and machine.
    For induction the input is the whole drawn span: a held-out span is never trained on,
    whatever length of it a row uses."""
    h = np.zeros(inputs.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):  # the hash wraps around 2^64 on purpose
        for column in inputs.T.astype(np.uint64):
            h = (h ^ (column + np.uint64(1))) * _HASH_MULT
            h ^= h >> np.uint64(29)
    return (h >> np.uint64(40)).astype(np.float64) / 2.0**24 < HELD_OUT_FRACTION


def draw_inputs(rng: np.random.Generator, batch: int, length: int, symbols: int, held_out: bool) -> np.ndarray:
    """(batch, length) uniform symbol indices in [0, symbols), all on the asked side of the split
    (rows on the other side are drawn again)."""
    out = np.empty((0, length), dtype=np.int64)
    tries = 0
    while out.shape[0] < batch:
        tries += 1
        if tries > 10_000:
            raise ValueError(f"{symbols} symbols at length {length} leave too few held-out sequences; use more.")
        draw = rng.integers(0, symbols, size=(max(batch, 64) * (8 if held_out else 1), length))
        keep = is_held_out(draw) == held_out
        out = np.concatenate([out, draw[keep]])
    return out[:batch]
