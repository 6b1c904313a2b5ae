"""The English -> Korean lexicon of the word-order task (English word, Korean word)."""

from __future__ import annotations

SUBJECTS = (
    ("cat", "고양이"), ("dog", "개"), ("teacher", "선생님"), ("student", "학생"), ("child", "아이"),
    ("bird", "새"), ("friend", "친구"), ("doctor", "의사"), ("farmer", "농부"), ("king", "왕"),
    ("rabbit", "토끼"), ("bear", "곰"), ("girl", "소녀"), ("boy", "소년"), ("baker", "제빵사"),
    ("robot", "로봇"), ("monkey", "원숭이"), ("tiger", "호랑이"), ("mother", "어머니"), ("brother", "형"),
)  # fmt: skip
OBJECTS = (
    ("letter", "편지"), ("book", "책"), ("apple", "사과"), ("bread", "빵"), ("song", "노래"),
    ("map", "지도"), ("box", "상자"), ("ball", "공"), ("cake", "케이크"), ("window", "창문"),
    ("picture", "그림"), ("newspaper", "신문"), ("door", "문"), ("flower", "꽃"), ("chair", "의자"),
    ("car", "자동차"), ("hat", "모자"), ("key", "열쇠"), ("water", "물"), ("rice", "밥"),
)  # fmt: skip
# every noun is a possible subject and a possible object (training shows each in both roles)
NOUNS = SUBJECTS + OBJECTS
VERBS = (
    ("reads", "읽는다"), ("writes", "쓴다"), ("sees", "본다"), ("buys", "산다"), ("likes", "좋아한다"),
    ("opens", "연다"), ("draws", "그린다"), ("carries", "나른다"), ("finds", "찾는다"), ("washes", "씻는다"),
    ("eats", "먹는다"), ("makes", "만든다"), ("sells", "판다"), ("holds", "잡는다"), ("cleans", "닦는다"),
    ("brings", "가져온다"),
)  # fmt: skip
ADJECTIVES = (
    ("red", "빨간"), ("big", "큰"), ("small", "작은"), ("old", "오래된"), ("new", "새로운"),
    ("blue", "파란"), ("happy", "행복한"), ("quiet", "조용한"), ("white", "하얀"), ("young", "젊은"),
    ("black", "검은"), ("pretty", "예쁜"),
)  # fmt: skip
# (English preposition, needs "the", English noun, Korean noun): "in the park" -> "공원 에서"
PLACES = (
    ("at", False, "home", "집"), ("at", False, "school", "학교"), ("in", True, "park", "공원"),
    ("in", True, "library", "도서관"), ("in", True, "kitchen", "부엌"), ("at", True, "market", "시장"),
    ("in", True, "garden", "정원"), ("at", True, "office", "사무실"), ("at", True, "station", "역"),
    ("in", True, "cafe", "카페"),
)  # fmt: skip
TIMES = (
    ("today", "오늘"), ("tomorrow", "내일"), ("now", "지금"), ("tonight", "오늘밤"), ("always", "항상"),
    ("often", "자주"), ("sometimes", "가끔"), ("usually", "보통"),
)  # fmt: skip
ARTICLES = ("the", "a")
PLACE_PARTICLE = "에서"
# (with final consonant, without): topic, subject, object
TOPIC, SUBJECT, OBJECT = ("은", "는"), ("이", "가"), ("을", "를")
PARTICLES = (*TOPIC, *SUBJECT, *OBJECT, PLACE_PARTICLE)


def has_final_consonant(word: str) -> bool:
    """Whether the last Hangul syllable of ``word`` has a final consonant (받침).

    A precomposed syllable is 0xAC00 + (initial * 21 + vowel) * 28 + final, final 0 = none.
    """
    code = ord(word[-1])
    if not 0xAC00 <= code <= 0xD7A3:
        raise ValueError(f"{word!r} does not end in a Hangul syllable.")
    return (code - 0xAC00) % 28 != 0


def particle(noun: str, pair: tuple[str, str]) -> str:
    """The form of a particle pair that follows ``noun``: 은/이/을 after a final consonant."""
    return pair[0] if has_final_consonant(noun) else pair[1]


def source_words() -> list[str]:
    """Every English word the word-order task uses."""
    words = {w for w, _ in SUBJECTS + OBJECTS + VERBS + ADJECTIVES + TIMES} | set(ARTICLES)
    words |= {p for p, _, _, _ in PLACES} | {n for _, _, n, _ in PLACES}
    return sorted(words)


def target_words() -> list[str]:
    """Every Korean token the word-order task produces."""
    words = {k for _, k in SUBJECTS + OBJECTS + VERBS + ADJECTIVES + TIMES} | set(PARTICLES)
    return sorted(words | {k for _, _, _, k in PLACES})
