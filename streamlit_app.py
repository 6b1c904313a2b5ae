"""Attention Lab: run with ``streamlit run streamlit_app.py``."""

import gc
import os

import streamlit as st
import torch
from streamlit import config

from ui import session
from ui.enter_runs import enter_runs
from ui.i18n import resolve_lang, t
from ui.navigation import ensure_shell, note_page
from ui.presenter import apply_compact_style, apply_presenter_style, presenter_toggle, resolve_presenting
from ui.share import preset_banner, share_box
from ui.sidebar import language_switch, offers_language_models, page_list, sidebar, uses_text_model
from ui.tour import follow_tour, land_on_step, register_pages, tour_panel

# Many browser sessions share this server's CPU: keep each inference to a few threads.
torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_THREADS", max(1, min(2, (os.cpu_count() or 2) // 2)))))


@st.cache_resource(show_spinner=False)
def freeze_startup_objects() -> int:
    """Once per process: move every object alive now (the modules of torch, plotly, pandas, Streamlit
    and ours, which live as long as the process) to the garbage collector's permanent generation.

    Streamlit runs a full collection after every run (``runner.postScriptGC``); over those ~260,000
    objects that took ~180 ms of CPU per run, every run of every session, more than a page itself.
    Objects made later (models, figures, sessions) are still collected as before.

    That full collection is then turned off: what it still walks grows with the sessions (~750
    objects each; 9-10 ms of CPU per run with 31 sessions, 2-3 ms with one: a third of a layer
    change), and Python's own generational collector frees the same cycles, a full pass only once
    enough new objects have survived (bench/bench_action_cpu.py)."""
    gc.collect()  # garbage now is freed, not frozen
    gc.freeze()
    config.set_option("runner.postScriptGC", False)
    return gc.get_freeze_count()


freeze_startup_objects()

resolve_lang()  # ?lang=, then the session's choice, then the browser's language, then English
presenting = resolve_presenting()  # ?present=1 or the sidebar toggle
# An emoji icon: a ":material/...:" page icon makes the browser fetch the favicon from a font server
# (the navigation icons below come with Streamlit's own bundled font and are fetched from nowhere).
st.set_page_config(
    page_title=t("common.app_title"),
    page_icon="🔍",
    layout="wide",
    initial_sidebar_state="collapsed" if presenting else "auto",
)

PAGES = [
    st.Page("pages/start.py", title=t("common.page_start"), icon=":material/school:", default=True),
    st.Page("pages/playground.py", title=t("common.page_playground"), icon=":material/edit_note:"),
    st.Page("pages/attention.py", title=t("common.page_attention"), icon=":material/grid_on:"),
    st.Page("pages/positional_encoding.py", title=t("common.page_positional"), icon=":material/waves:"),
    st.Page("pages/masks.py", title=t("common.page_masks"), icon=":material/visibility_off:"),
    st.Page("pages/classifier.py", title=t("common.page_classifier"), icon=":material/balance:"),
    st.Page("pages/translate.py", title=t("translate.title"), icon=":material/translate:"),
    st.Page("pages/generate.py", title=t("generate.title"), icon=":material/auto_awesome:"),
    st.Page("pages/fill_mask.py", title=t("fill_mask.title"), icon=":material/spellcheck:"),
    st.Page("pages/similarity.py", title=t("similarity.title"), icon=":material/compare_arrows:"),
    st.Page("pages/head_atlas.py", title=t("atlas.title"), icon=":material/apps:"),
    st.Page("pages/residual.py", title=t("residual.title"), icon=":material/stacked_line_chart:"),
    st.Page("pages/train.py", title=t("train.title"), icon=":material/model_training:"),
    st.Page("pages/vision.py", title=t("vision.page_title"), icon=":material/image_search:"),
    st.Page("pages/checkpoints.py", title=t("common.page_checkpoints"), icon=":material/upload_file:"),
    st.Page("pages/class.py", title=t("class.title"), icon=":material/groups:"),
]

page = st.navigation(PAGES, position="hidden")  # the sidebar draws the links (ui.sidebar.page_list)
ensure_shell(entry=True)  # marks this run as one through the shell (pages rerun a run that was not)
register_pages([p.url_path for p in PAGES])  # the lesson links only to pages that exist
follow_tour()  # a tour button chose a step: open its page
note_page(page.url_path)  # lets the sentence box carry its text over to the next page
apply_compact_style()
enter_runs()  # Enter runs every sentence box; Shift+Enter adds a line
if presenting:
    apply_presenter_style()
language_switch(st.sidebar)  # above the page list: on a 768-px screen it shows without scrolling
page_list(st.sidebar, PAGES)
presenter_toggle(st.sidebar, t("sidebar.present"), t("sidebar.present_help"))
session.set_selection(sidebar(uses_text_model(page.url_path), offers_language_models(page.url_path)))
share_slot = st.sidebar.container()
preset_banner()
tour_panel(page.url_path)
land_on_step(page.url_path)  # a lesson link: scroll to the step's controls
page.run()
share_box(share_slot, page.url_path)  # after the page, so the address holds this run's choices
