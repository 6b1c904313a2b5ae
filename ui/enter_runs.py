"""Enter runs every sentence box; Shift+Enter starts a new line (one line is one input).

Streamlit's multi-line box applies its text only on Ctrl+Enter or a click outside, and Enter adds a
line: a student who presses Enter sees nothing happen. A single-line box cannot hold the several
sentences the pages compare. So every ``st.text_area`` of the app keeps its lines, and a plain Enter is
turned into the Ctrl+Enter that Streamlit already answers (its own key handler applies the text, so
the address, the shared text and the callbacks behave exactly as before). Streamlit's hint under the
box ("Press Ctrl+Enter to apply") is replaced by the app's own, in the interface's language.
"""

from __future__ import annotations

import json

import streamlit as st

from .i18n import t

# Once per browser page (the flag survives reruns): a keydown listener in the capture phase, ahead of
# Streamlit's own. Enter while an input method is composing (Hangul) only ends the composition.
SCRIPT = """<script>
(() => {
  if (window.__attentionLabEnterRuns) return;
  window.__attentionLabEnterRuns = true;
  document.addEventListener("keydown", (event) => {
    const box = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.isComposing || event.keyCode === 229) return;
    if (!(box instanceof HTMLTextAreaElement) || !box.closest(".stTextArea")) return;
    event.preventDefault();
    event.stopPropagation();
    box.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", code: "Enter", keyCode: 13,
      ctrlKey: true, metaKey: true, bubbles: true, cancelable: true}));
  }, true);
})();
</script>"""

HINT_CSS = """<style>
.stTextArea [data-testid="InputInstructions"] > span:first-child { display: none; }
.stTextArea [data-testid="InputInstructions"]::before { content: %s; }
</style>"""


def hint_css(hint: str) -> str:
    """CSS that shows ``hint`` where Streamlit writes its own key hint under a multi-line box."""
    return HINT_CSS % json.dumps(hint, ensure_ascii=False)


def enter_runs() -> None:
    """Call once per run (the entry script): Enter runs, Shift+Enter adds a line, in every text box."""
    st.html(SCRIPT + hint_css(t("text.enter_hint")), unsafe_allow_javascript=True)
