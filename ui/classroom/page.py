"""The Class page: who is reading it (a teacher screen, a student, or someone about to join or start a
class) and the forms to join, start or take back a class. Every action is a button callback: it runs before
the next run, so no rerun of the page loses a click."""

from __future__ import annotations

import secrets

import streamlit as st

from .. import session
from ..i18n import current_lang, t
from .store import NICKNAME_MAX, ClassError, ClassStore, clean_nickname, normalize_code
from .student import student_view
from .teacher import teacher_view
from .view import CODE_PARAM, ME_PARAM, MESSAGE, class_store, client_id, error_text, refused, show_message


def new_screen() -> str:
    """A teacher screen's own id (kept in its browser session, like the secret)."""
    return secrets.token_urlsafe(9)


def class_page() -> None:
    """The whole page: the teacher's view, a student's, or the join / start forms."""
    st.title(t("class.title"), help=t("class.intro"))
    try:
        store = class_store()
    except ClassError as err:
        st.error(error_text(err))
        st.stop()
    teacher = session.CLASS_TEACHER.get()
    if teacher and store.is_teacher(teacher["code"], teacher["secret"]):
        teacher_view(store, teacher["code"], teacher["secret"], teacher["screen"])
        return
    code, me = st.query_params.get(CODE_PARAM), st.query_params.get(ME_PARAM)
    if code and me:
        student_view(code, me)
        return
    landing(store, code or "")


# ---- joining and starting -------------------------------------------------------------------------------------------
JOIN_CODE, JOIN_NAME = "class_join_code", "class_join_name"
RESUME_CODE, RESUME_KEY = "class_resume_code", "class_resume_key"


def _join() -> None:
    typed, name = session.value(JOIN_CODE).get() or "", session.value(JOIN_NAME).get() or ""
    length = len(clean_nickname(name, limit=None))
    if length > NICKNAME_MAX:  # refused with the length, the typed name kept in its box to shorten
        MESSAGE.set(t("class.nickname_too_long", chars=length, limit=NICKNAME_MAX))
        return
    try:
        student = class_store().join(typed, client_id(), nickname=name)
    except ClassError as err:
        refused(err)
        return
    st.query_params[CODE_PARAM] = normalize_code(typed)
    st.query_params[ME_PARAM] = student


def _start() -> None:
    screen = new_screen()
    try:
        code, secret = class_store().start_class(current_lang(), screen=screen)
    except ClassError as err:
        refused(err)
        return
    session.CLASS_TEACHER.set({"code": code, "secret": secret, "screen": screen})


def _resume() -> None:
    """The Resume form: the code and the key open the class on this screen, which takes the lead (the screen
    that led it, if it is still open, says so and can take it back)."""
    code, key = normalize_code(session.value(RESUME_CODE).get() or ""), (session.value(RESUME_KEY).get() or "").strip()
    screen = new_screen()
    try:
        if not class_store().is_teacher(code, key):
            MESSAGE.set(t("class.error_not_teacher"))
            return
        class_store().lead(code, key, screen, take=True)
    except ClassError as err:
        refused(err)
        return
    session.CLASS_TEACHER.set({"code": code, "secret": key, "screen": screen})


def landing(store: ClassStore, code: str) -> None:
    show_message()
    join, teach = st.columns([3, 2], gap="large")
    with join:
        st.subheader(t("class.join_title"))
        if code and not session.value(JOIN_CODE).is_set:
            session.value(JOIN_CODE).set(code)
        with st.form("class_join"):
            st.text_input(
                t("class.code"), placeholder="ABC123", key=JOIN_CODE
            )  # a pasted link: its code (normalize_code)
            st.text_input(t("class.nickname", limit=NICKNAME_MAX), help=t("class.nickname_help"), key=JOIN_NAME)
            st.form_submit_button(t("class.join"), type="primary", icon=":material/login:", on_click=_join,
                                  key="class_join_go")  # fmt: skip
    with teach:
        st.subheader(t("class.teach_title"))
        st.caption(t("class.teach_caption"))
        st.button(t("class.start"), icon=":material/co_present:", key="class_start", on_click=_start)
        with st.expander(t("class.resume_title")):
            with st.form("class_resume"):
                st.text_input(t("class.code"), key=RESUME_CODE)
                st.text_input(t("class.teacher_key"), type="password", key=RESUME_KEY)  # a wrong one is said, never cut
                st.form_submit_button(t("class.resume"), on_click=_resume, key="class_resume_go")
