"""The Generate page's output: the prompt followed by the model's new tokens, marked.

Built as HTML for ``st.html`` (which does not read markdown), every character of the prompt and of
the model's text escaped: whatever the model writes (",", "**", "<b>", ":red[x]") is shown as
written, and the marking of the new tokens is a styled element it cannot close or open. Markdown
bold ("**" around the new text) broke when the new text began with punctuation: "great**, and …**".
"""

from __future__ import annotations

from html import escape

NEW_TOKENS_CLASS = "al-new-tokens"
# bold on a light amber background, dark text (contrast 16:1), so it is visible from the back row too
NEW_TOKENS_STYLE = "font-weight:700;background:#FEF3C7;color:#111111;border-radius:3px;padding:0 2px"
BLOCK_STYLE = "font-size:1.15rem;line-height:1.7;white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 0.5rem 0"


def continuation_html(prompt: str, written: str) -> str:
    """``prompt`` then ``written`` (the new tokens) in a marked span, both escaped; no span when
    nothing was written. Line breaks and runs of spaces are kept as the model wrote them."""
    marked = f'<span class="{NEW_TOKENS_CLASS}" style="{NEW_TOKENS_STYLE}">{escape(written)}</span>' if written else ""
    return f'<p style="{BLOCK_STYLE}">{escape(prompt)}{marked}</p>'
