"""The Generate page's output: the prompt followed by the model's new tokens, marked; the bars of a
step (the chosen token always among them); which earlier token each head reads.

Built as HTML for ``st.html`` (which does not read markdown), every character of the prompt and of
the model's text escaped: whatever the model writes (",", "**", "<b>", ":red[x]") is shown as
written, and the marking of the new tokens is a styled element it cannot close or open. Markdown
bold ("**" around the new text) broke when the new text began with punctuation: "great**, and …**".
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

NEW_TOKENS_CLASS = "al-new-tokens"
# bold on a light amber background, dark text (contrast 16:1), so it is visible from the back row too
NEW_TOKENS_STYLE = "font-weight:700;background:#FEF3C7;color:#111111;border-radius:3px;padding:0 2px"
BLOCK_STYLE = "font-size:1.15rem;line-height:1.7;white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 0.5rem 0"


def continuation_html(prompt: str, written: str) -> str:
    """``prompt`` then ``written`` (the new tokens) in a marked span, both escaped; no span when
    nothing was written. Line breaks and runs of spaces are kept as the model wrote them."""
    marked = f'<span class="{NEW_TOKENS_CLASS}" style="{NEW_TOKENS_STYLE}">{escape(written)}</span>' if written else ""
    return f'<p style="{BLOCK_STYLE}">{escape(prompt)}{marked}</p>'


@dataclass(frozen=True)
class Bars:
    """The next-token bars of one step: ids, model probabilities, probabilities after the sampling
    settings (None for greedy), each bar's rank (1 = likeliest) and which bar is the chosen token."""

    ids: list[int]
    probs: np.ndarray
    filtered: np.ndarray | None
    ranks: list[int]
    chosen: int


def bars_with_chosen(step, shown: int, sampling: bool) -> Bars:
    """The ``shown`` likeliest tokens of a step, and the chosen one (drawn by sampling, or forced) as one
    more bar after them when it is not among them: the bar the step's sentence talks about is always drawn."""
    ids = [int(i) for i in step.top_ids[:shown]]
    probs = list(step.top_probs[:shown])
    filtered = list(step.top_filtered[:shown])
    ranks = list(range(1, len(ids) + 1))
    if step.token_id not in ids:
        ids.append(int(step.token_id))
        probs.append(step.chosen_prob)
        filtered.append(step.chosen_filtered)
        ranks.append(step.chosen_rank + 1)
    kept = np.asarray(filtered, dtype=np.float32) if sampling else None
    return Bars(ids, np.asarray(probs, dtype=np.float32), kept, ranks, ids.index(int(step.token_id)))


def copy_rows(attention: np.ndarray, prefix_ids: list[int], token_id: int, layers: range) -> list[tuple]:
    """Per head of ``layers`` (0-based): (layer, head, the earlier position it attends to most, its
    weight, "same" when the new token is that token, "next" when it is the token after it — the
    induction pattern — else ""). ``attention`` (L, H, T) the predicting token's rows."""
    rows = []
    n = attention.shape[-1]
    for layer in layers:
        for head in range(attention.shape[1]):
            row = attention[layer, head]
            j = int(row.argmax())
            after = prefix_ids[j + 1] if j + 1 < n else None
            copies = "same" if prefix_ids[j] == token_id else "next" if after == token_id else ""
            rows.append((layer, head, j, float(row[j]), copies))
    return rows


MAX_LAYERS_SHOWN = 4  # layers of head rows drawn at once: 4 x 9 heads = 36 rows a reader can tell apart


def layer_windows(n_layers: int, size: int = MAX_LAYERS_SHOWN) -> list[tuple[int, int]]:
    """The layers (first, last; 1-based, inclusive) a per-head figure can show at once: every layer in
    one window up to ``size`` layers, else consecutive windows of ``size`` (30 layers: 1–4 … 29–30)."""
    return [(first, min(first + size - 1, n_layers)) for first in range(1, n_layers + 1, size)]


TURN_STYLE = "font-size:1.1rem;line-height:1.6;white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 0.4rem 0;padding:0.4rem 0.6rem;border-radius:6px"
QUESTION_BACKGROUND, ANSWER_BACKGROUND = "#EEF2F7", "#FEF3C7"


def chat_html(question: str, answer: str, asker: str, model: str) -> str:
    """The question and the model's answer so far as two turns, every character of both escaped
    (``asker``/``model`` are the turns' names, from the catalogue)."""

    def turn(name: str, text: str, background: str) -> str:
        return f'<p style="{TURN_STYLE};background:{background};color:#111111"><b>{escape(name)}</b> {escape(text)}</p>'

    return turn(asker, question, QUESTION_BACKGROUND) + turn(model, answer or "…", ANSWER_BACKGROUND)
