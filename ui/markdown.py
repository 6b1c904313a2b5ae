"""User text inside ``st.markdown``: escaped so that it is shown literally, never as markup or HTML."""

from __future__ import annotations

import re

# CommonMark lets any ASCII punctuation be backslash-escaped; Streamlit adds ':' (emoji shortcodes,
# colour directives) and '$' (LaTeX). Escaping them all shows '<b>', '**x**' or ':red[x]' as typed.
_SPECIAL = frozenset("\\`*_{}[]()<>#+-.!|~$:&\"'=^%/;@?,")

KNOWN = "blue"
UNKNOWN = "orange"
CUT = "gray"
SPECIAL = "violet"
SPACE_MARK = "␣"
# special tokens as tokenizers write them: [CLS] [SEP] [MASK], <s> </s> <pad> <cls>, <|endoftext|>, Marian's >>ko<<
_SPECIAL_TOKEN = re.compile(r"^(?:\[[A-Z_]+\]|</?[a-z_]+>|<\|[a-z_]+\|>|>>[a-z_]+<<)$")
_WORD_START = ("▁", "Ġ")  # SentencePiece's and byte-level BPE's mark of a piece that starts a word


def md_escape(text: str) -> str:
    """``text`` for ``st.markdown``: every markup character escaped, line breaks made spaces."""
    flat = " ".join(text.splitlines())
    return "".join("\\" + c if c in _SPECIAL else c for c in flat)


def is_special_token(token: str) -> bool:
    """A token a tokenizer adds or reserves ([CLS], </s>, <|endoftext|>, >>ko<<), by how it is written."""
    return bool(_SPECIAL_TOKEN.match(token))


def readable_token(token: str) -> str:
    """A piece as a reader sees it: a word-start mark (``▁``, ``Ġ``) as ``␣``."""
    return SPACE_MARK + token[1:] if token[:1] in _WORD_START and len(token) > 1 else token


def _chip(token: str, unknown: bool, special: bool | None = None) -> str:
    special = is_special_token(token) if special is None else special
    colour = UNKNOWN if unknown else SPECIAL if special else KNOWN
    return f":{colour}-background[{md_escape(readable_token(token))}]"


def token_chips(
    tokens: list[str],
    unknown: list[bool],
    cut: int = 0,
    start: int = 0,
    lang: str = "en",
    special: list[bool] | None = None,
) -> str:
    """Markdown showing each token as a coloured chip: blue if the model knows it, orange if it
    became ``<unk>``, violet for a special token ([CLS], </s>…; ``special`` says which, else they are
    told by their spelling); word-start marks shown as ``␣``; ``cut`` tokens that did not fit end the
    line as one grey chip."""
    from .i18n import translate

    if len(tokens) != len(unknown) or (special is not None and len(special) != len(tokens)):
        raise ValueError(f"{len(tokens)} tokens but {len(unknown)} unknown flags.")
    marks = special if special is not None else [None] * len(tokens)
    chips = [_chip(tok, unk, sp) for tok, unk, sp in zip(tokens, unknown, marks)]
    if cut > 0:
        key = "text.cut_one" if cut == 1 else "text.cut_many"
        chips.append(f":{CUT}-background[{translate(key, lang, count=f'{cut:,}')}]")
    return " ".join(chips) if chips else translate("text.no_tokens", lang)


def legend(lang: str = "en") -> str:
    """The key to the chips' colours."""
    from .i18n import translate

    return (
        f":{KNOWN}-background[{translate('text.chip_known', lang)}] "
        f":{UNKNOWN}-background[{translate('text.chip_unknown', lang)} → {md_escape('<unk>')}] "
        f":{SPECIAL}-background[{md_escape(translate('text.chip_special', lang))}] "
        f":{CUT}-background[{translate('text.chip_cut', lang)}]"
    )
