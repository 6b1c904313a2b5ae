"""Attention Lab: run with ``streamlit run streamlit_app.py``."""

import os

import streamlit as st
import torch

from ui.navigation import note_page
from ui.sidebar import sidebar

# Many browser sessions share this server's CPU: keep each inference to a few threads.
torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_THREADS", max(1, min(2, (os.cpu_count() or 2) // 2)))))

st.set_page_config(page_title="Attention Lab", page_icon=":material/search:", layout="wide")

PAGES = [
    st.Page("pages/playground.py", title="Playground", icon=":material/edit_note:", default=True),
    st.Page("pages/attention.py", title="Attention", icon=":material/grid_on:"),
    st.Page("pages/positional_encoding.py", title="Positional encoding", icon=":material/waves:"),
    st.Page("pages/masks.py", title="Masks", icon=":material/visibility_off:"),
    st.Page("pages/classifier.py", title="Classifier", icon=":material/balance:"),
    st.Page("pages/checkpoints.py", title="Checkpoints", icon=":material/upload_file:"),
]

page = st.navigation(PAGES)
note_page(page.url_path)  # lets the sentence box carry its text over to the next page
st.session_state["selection"] = sidebar()
page.run()
