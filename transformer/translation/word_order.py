"""English S-V-O sentences -> Korean word order (time, subject+은/는|이/가, place+에서,
object+을/를, verb), with the gold alignment of every Korean token.

"the red cat reads a big letter at home today" -> "오늘 빨간 고양이 는 집 에서 큰 편지 를 읽는다".
A subject with "the" takes the topic particle 은/는, one with "a" the subject particle 이/가.
Every noun can be the subject or the object (training shows each noun in both roles, so each
gets its particles 은/는, 이/가 and 을/를 right); what is held out are subject-verb pairs, which
never occur in training sentences (see :func:`held_out_pairs`).
"""

from __future__ import annotations

import random

from . import lexicon as lx
from .pairs import Pair

HELD_OUT_SHARE = 0.2
HELD_OUT_SEED = 11


def held_out_pairs(seed: int = HELD_OUT_SEED) -> frozenset[tuple[str, str]]:
    """The (subject, verb) English pairs kept out of training: a fixed 20 % of all pairs."""
    pairs = [(s, v) for s, _ in lx.NOUNS for v, _ in lx.VERBS]
    rng = random.Random(seed)
    return frozenset(rng.sample(pairs, round(HELD_OUT_SHARE * len(pairs))))


class _Builder:
    """Source and target token lists growing together; remembers each target token's source."""

    def __init__(self) -> None:
        self.source: list[str] = []
        self.target: list[str] = []
        self.alignment: list[int | None] = []

    def add_source(self, *words: str) -> int:
        """Append ``words``; returns the position of the last one."""
        self.source.extend(words)
        return len(self.source) - 1

    def add_target(self, word: str, source_pos: int | None) -> None:
        self.target.append(word)
        self.alignment.append(source_pos)


def _noun_phrase(b: _Builder, article: str, adjective, noun) -> tuple[int | None, int]:
    """English "article [adjective] noun"; returns (adjective position or None, noun position)."""
    b.add_source(article)
    adj_pos = b.add_source(adjective[0]) if adjective else None
    return adj_pos, b.add_source(noun[0])


def make_pair(subject, verb, obj, subj_article, obj_article, subj_adj=None, obj_adj=None, place=None,
              time=None, time_first=False) -> Pair:  # fmt: skip
    """One pair from lexicon entries (``(english, korean)`` tuples; ``place`` a PLACES entry)."""
    b = _Builder()
    time_pos = b.add_source(time[0]) if time and time_first else None
    s_adj, s_noun = _noun_phrase(b, subj_article, subj_adj, subject)
    verb_pos = b.add_source(verb[0])
    o_adj, o_noun = _noun_phrase(b, obj_article, obj_adj, obj)
    place_pos = None
    if place:
        prep, with_the, noun, _ = place
        place_pos = b.add_source(*([prep, "the", noun] if with_the else [prep, noun]))
    if time and not time_first:
        time_pos = b.add_source(time[0])
    if time:
        b.add_target(time[1], time_pos)
    if subj_adj:
        b.add_target(subj_adj[1], s_adj)
    b.add_target(subject[1], s_noun)
    b.add_target(lx.particle(subject[1], lx.TOPIC if subj_article == "the" else lx.SUBJECT), None)
    if place:
        b.add_target(place[3], place_pos)
        b.add_target(lx.PLACE_PARTICLE, None)
    if obj_adj:
        b.add_target(obj_adj[1], o_adj)
    b.add_target(obj[1], o_noun)
    b.add_target(lx.particle(obj[1], lx.OBJECT), None)
    b.add_target(verb[1], verb_pos)
    return Pair(tuple(b.source), tuple(b.target), tuple(b.alignment))


def sample_pair(rng: random.Random, split: str = "train", held_out: frozenset | None = None) -> Pair:
    """A random pair; ``split="train"`` avoids the held-out subject-verb pairs, ``"test"`` uses only them."""
    held_out = held_out_pairs() if held_out is None else held_out
    while True:
        subject, verb = rng.choice(lx.NOUNS), rng.choice(lx.VERBS)
        if ((subject[0], verb[0]) in held_out) == (split == "test"):
            break
    obj = rng.choice([n for n in lx.NOUNS if n != subject])
    maybe = lambda items, p: rng.choice(items) if rng.random() < p else None  # noqa: E731
    return make_pair(
        subject, verb, obj, rng.choice(lx.ARTICLES), rng.choice(lx.ARTICLES),
        subj_adj=maybe(lx.ADJECTIVES, 0.4), obj_adj=maybe(lx.ADJECTIVES, 0.4), place=maybe(lx.PLACES, 0.5),
        time=maybe(lx.TIMES, 0.5), time_first=rng.random() < 0.3,
    )  # fmt: skip


def generate(n: int, seed: int, split: str = "train") -> list[Pair]:
    """``n`` pairs from a seeded generator (same seed, same pairs)."""
    rng, held_out = random.Random(seed), held_out_pairs()
    return [sample_pair(rng, split, held_out) for _ in range(n)]


def examples() -> list[Pair]:
    """Hand-picked sentences for the page (some use held-out subject-verb pairs)."""
    s, v, a = (dict(x) for x in (lx.NOUNS, lx.VERBS, lx.ADJECTIVES))
    o = s  # any noun in either role
    place = {p[2]: p for p in lx.PLACES}
    t = dict(lx.TIMES)
    e = lambda d, w: (w, d[w])  # noqa: E731
    return [
        make_pair(e(s, "cat"), e(v, "reads"), e(o, "letter"), "the", "a", e(a, "red"), e(a, "big"),
                  place["home"], ("today", t["today"])),
        make_pair(e(s, "teacher"), e(v, "opens"), e(o, "window"), "a", "the"),
        make_pair(e(s, "bear"), e(v, "eats"), e(o, "rice"), "the", "the", None, e(a, "white"), place["kitchen"],
                  ("now", t["now"]), time_first=True),
        make_pair(e(s, "robot"), e(v, "draws"), e(o, "picture"), "a", "a", e(a, "small"), None, place["park"]),
        make_pair(e(s, "child"), e(v, "likes"), e(o, "song"), "the", "the", e(a, "happy"), e(a, "quiet"), None,
                  ("sometimes", t["sometimes"])),
        make_pair(e(s, "student"), e(v, "finds"), e(o, "teacher"), "a", "the", None, e(a, "old")),
        make_pair(e(s, "doctor"), e(v, "washes"), e(o, "dog"), "the", "a", None, None, place["garden"]),
    ]  # fmt: skip
