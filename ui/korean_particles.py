"""Korean particles that depend on the word before them, chosen once a text is formatted.

A Korean catalogue text writes both forms where a value comes before a particle: ``{before}(이)었습니다``,
``{t}(으)로``, ``{name}을(를)``, ``{after}이(가)``, ``{file}은(는)``, ``{a}과(와)``. Once the value is
in, :func:`resolve` keeps the one form that fits how the word before is read: a Hangul syllable by
its final consonant (받침), a number by how it is read aloud ("0.021" ends in 일: 0.021이었습니다;
"0.009" ends in 구: 0.009였습니다; "10" is 십, "100" 백, "1,000" 천), a Latin word as it is read in
Korean (an abbreviation letter by letter: "MASK" 마스크 is read 엠에이에스케이, ends in 이; "model.bin"
ends in 빈). Closing brackets, quotes and code marks are skipped back over ("`<unk>`" is read as unk).
Anything else (an emoji, a symbol) takes the form without a final consonant: a marker never reaches
the screen.
"""

from __future__ import annotations

import re

# Hangul syllable finals: none 0, ㄹ 8 (index in the 28 finals of a precomposed syllable)
NO_FINAL, RIEUL = 0, 8
# Finals of the digits read one by one (영 일 이 삼 사 오 육 칠 팔 구) and of the place words
# ending a round number (십 백 천 만: a final, none of them ㄹ).
DIGIT_FINALS = {"0": 21, "1": RIEUL, "2": 0, "3": 16, "4": 0, "5": 0, "6": 1, "7": RIEUL, "8": RIEUL, "9": 0}
ROUND_FINAL = 17  # any final other than ㄹ (십's ㅂ)
MARKUP = "*_~“”‘’\"'`)]}>"  # skipped back over to find the word the particle follows
# English words that end in a final consonant when read in Korean (book 북, bin 빈; "l" reads ㄹ: model 모델),
# and the capital letters whose names end in one (L 엘, R 알: ㄹ; M 엠, N 엔)
WORD_FINALS = {"l": RIEUL, **dict.fromkeys("bcdgkmnpt", ROUND_FINAL)}
LETTER_FINALS = {"L": RIEUL, "R": RIEUL, "M": ROUND_FINAL, "N": ROUND_FINAL}
LATIN = re.compile(r"[A-Za-z]+$")

# marker -> (form after a final consonant, form without one); (으)로 also drops 으 after ㄹ
PAIRS = {"이(가)": ("이", "가"), "을(를)": ("을", "를"), "은(는)": ("은", "는"), "과(와)": ("과", "와")}
MARKER = re.compile(r"\(이\)었|\(이\)|\(으\)로|이\(가\)|을\(를\)|은\(는\)|과\(와\)")
NUMBER = re.compile(r"[0-9][0-9,]*(?:\.[0-9]+)?$")


def syllable_final(ch: str) -> int | None:
    """The final consonant index of a Hangul syllable (0: none); None for other characters."""
    code = ord(ch) - 0xAC00
    return code % 28 if 0 <= code <= 0xD7A3 - 0xAC00 else None


def number_final(number: str) -> int:
    """The final consonant of ``number`` read aloud in Korean ("0.021" -> 일's ㄹ, "100" -> 백's)."""
    whole, _, decimals = number.replace(",", "").partition(".")
    if decimals:  # read digit by digit after the point
        return DIGIT_FINALS[decimals[-1]]
    if whole.strip("0") and whole.endswith("0"):
        return ROUND_FINAL  # 십, 백, 천, 만, 억: all end in a consonant
    return DIGIT_FINALS[whole[-1]]


def final_before(text: str) -> int | None:
    """The final consonant of the word ending ``text`` (markup skipped), None when unknown."""
    stripped = text.rstrip(MARKUP)
    if not stripped:
        return None
    if stripped.endswith("%"):
        return NO_FINAL  # 퍼센트
    number = NUMBER.search(stripped)
    if number:
        return number_final(number.group(0))
    latin = LATIN.search(stripped)
    if latin:
        return latin_final(latin.group(0))
    return syllable_final(stripped[-1])


def latin_final(word: str) -> int:
    """The final consonant of an English word as read in Korean: an abbreviation ("UNK", "PC")
    letter by letter, any other word by its last letter ("bin" 빈, "model" 모델, "base" 베이스)."""
    if word.isupper():
        return LETTER_FINALS.get(word[-1], NO_FINAL)
    return WORD_FINALS.get(word[-1].lower(), NO_FINAL)


def form(marker: str, final: int) -> str:
    if marker == "(이)었":
        return "이었" if final != NO_FINAL else "였"  # 이었 contracts to 였 after a vowel
    if marker == "(이)":
        return "이" if final != NO_FINAL else ""
    if marker == "(으)로":
        return "으로" if final not in (NO_FINAL, RIEUL) else "로"
    with_final, without = PAIRS[marker]
    return with_final if final != NO_FINAL else without


def resolve(text: str) -> str:
    """``text`` with each two-form particle marker replaced by the form its word takes."""
    out, last = [], 0
    for match in MARKER.finditer(text):
        before = text[last : match.start()]
        out.append(before)
        final = final_before("".join(out))
        out.append(form(match.group(0), NO_FINAL if final is None else final))  # unknown: no final
        last = match.end()
    out.append(text[last:])
    return "".join(out)
