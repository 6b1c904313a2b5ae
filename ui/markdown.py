"""User text inside ``st.markdown``: escaped so that it is shown literally, never as markup or HTML."""

from __future__ import annotations

# CommonMark lets any ASCII punctuation be backslash-escaped; Streamlit adds ':' (emoji shortcodes,
# colour directives) and '$' (LaTeX). Escaping them all shows '<b>', '**x**' or ':red[x]' as typed.
_SPECIAL = frozenset("\\`*_{}[]()<>#+-.!|~$:&\"'=^%/;@?,")

KNOWN = "blue"
UNKNOWN = "orange"
CUT = "gray"


def md_escape(text: str) -> str:
    """``text`` for ``st.markdown``: every markup character escaped, line breaks made spaces."""
    flat = " ".join(text.splitlines())
    return "".join("\\" + c if c in _SPECIAL else c for c in flat)


def token_chips(tokens: list[str], unknown: list[bool], cut: int = 0, start: int = 0, lang: str = "en") -> str:
    """Markdown showing each token as a coloured chip: blue if the model knows it, orange if it
    became ``<unk>``; ``cut`` tokens that did not fit end the line as one grey chip."""
    from .i18n import translate

    if len(tokens) != len(unknown):
        raise ValueError(f"{len(tokens)} tokens but {len(unknown)} unknown flags.")
    chips = [f":{UNKNOWN if unk else KNOWN}-background[{md_escape(tok)}]" for tok, unk in zip(tokens, unknown)]
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
        f":{CUT}-background[{translate('text.chip_cut', lang)}]"
    )
