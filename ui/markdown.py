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


def token_chips(tokens: list[str], unknown: list[bool], cut: int = 0, start: int = 0) -> str:
    """Markdown showing each token as a coloured chip: blue if the model knows it, orange if it
    became ``<unk>``; ``cut`` tokens that did not fit end the line as one grey chip."""
    if len(tokens) != len(unknown):
        raise ValueError(f"{len(tokens)} tokens but {len(unknown)} unknown flags.")
    chips = [f":{UNKNOWN if unk else KNOWN}-background[{md_escape(tok)}]" for tok, unk in zip(tokens, unknown)]
    if cut > 0:
        chips.append(f":{CUT}-background[… {cut:,} more token{'s' if cut != 1 else ''} cut off]")
    return " ".join(chips) if chips else "*(no tokens)*"


LEGEND = (
    f":{KNOWN}-background[known word] :{UNKNOWN}-background[unknown word → {md_escape('<unk>')}] "
    f":{CUT}-background[cut off at the maximum length]"
)
