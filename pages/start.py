"""Start: what the app is, the suggested lesson with a link to each step's view, the guided tour."""

import streamlit as st

from ui import session
from ui.i18n import current_lang, t
from ui.model_about import model_line
from ui.models import Selection, default_model, get_model
from ui.navigation import ensure_shell, shared
from ui.text import TEXT_KEY
from ui.tour import go_to_step, lesson, link_query, model_note, tour_active, tour_step


def tour_controls() -> None:
    """Start the guided tour, or resume it where the student left it."""
    left = tour_step()
    cols = st.columns(2)
    if left is not None and not tour_active():
        cols[0].button(
            t("start.tour_resume", n=left + 1),
            key="start_tour_resume",
            type="primary",
            on_click=go_to_step,
            args=(left,),
        )
        cols[1].button(t("start.tour_again"), key="start_tour", on_click=go_to_step, args=(0,))
    else:
        cols[0].button(t("start.tour_start"), key="start_tour", type="primary", on_click=go_to_step, args=(0,))


def lesson_links() -> None:
    """One link per step, opening its page in the state the step needs."""
    for number, step in enumerate(lesson(), start=1):
        with st.container(border=True, key=f"start_step_{number}"):
            st.page_link(step.page, label=f"{number}. {t(step.title_key)}", query_params=link_query(number, step))
            st.caption(" ".join(filter(None, (t(step.summary_key), model_note(step, current_lang())))))


ensure_shell()  # a shared link to this page still gets the sidebar
# The lesson's links carry their own sentence: do not let the last page's text replace it.
shared(TEXT_KEY).pop()
st.title(t("start.title"))
st.markdown(t("start.intro"))
# the model the pages run now: the sidebar's choice, else this language's default
chosen = session.selection() or Selection(default_model(current_lang()), "cpu", 1)
st.markdown(model_line(chosen, get_model(chosen)))
st.subheader(t("start.tour_heading"))
st.markdown(t("start.tour_text"))
tour_controls()
st.subheader(t("start.lesson_heading"))
st.markdown(t("start.lesson_text"))
lesson_links()
st.subheader(t("start.class_heading"))
st.markdown(t("start.class_text"))
