"""Per-page adjustments of the shared shell."""

from __future__ import annotations

import streamlit as st

# The sidebar's model picker chooses a text model; Translate and Vision have their own picker for their
# own models, and two pickers side by side left students unsure which one counts.
HIDE_TEXT_MODEL_CSS = (
    '<style>section[data-testid="stSidebar"] .st-key-model, '
    'section[data-testid="stSidebar"] .st-key-max_len { display: none; }</style>'
)


def hide_text_model_picker() -> None:
    """On a page with its own model picker: hide the sidebar's text-model picker and its length slider."""
    st.html(HIDE_TEXT_MODEL_CSS)
