"""The teacher's screen on the Class page (the projector): the code and join address, the question on screen
with its live count or its reveal, the class's questions with the CSV export, and the teacher's buttons.

What changes during a class is drawn by one fragment that reruns every ``RUN_EVERY_S`` seconds
(:func:`projector`): the question, the count (or, after the reveal, the class beside the model), the list
of questions and the CSV, all from one read of the store, so the projector shows one count. The buttons
(reveal, show again, end the class) stay outside it: a click there starts a full run, which nothing drops;
when what they act on changes (a new question, the reveal, the lead taken by another screen), the poll
reruns the page.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from .. import session
from .. import streamlit_internals as internals
from ..i18n import current_lang, t
from ..presenter import is_presenting
from ..share import cached_qr_png
from .poll_watch import polled, watch_poll
from .questions import export_rows, option_text, question_text
from .store import ClassError, ClassStore, Lead, Question, Tally
from .view import (
    ASK_PAGES,
    RUN_EVERY_S,
    class_store,
    draw_reveal,
    error_text,
    join_url,
    refused,
    sentence,
    show_message,
    summary,
)

REVEAL_KEY = "class_projector_reveal"  # the reveal's container on the projector
FULL_RUN = session.value("_class_full_run")  # what this screen's last complete full run drew; None while one runs


@dataclass(frozen=True)
class Snapshot:
    """One read of a class as a teacher screen shows it."""

    questions: list[Question]  # with the model's answers (the teacher's read): never shown before the reveal
    tallies: dict[int, Tally]  # by question number: the one count the screen shows
    current: Question | None
    lead: Lead  # whether this screen leads the class, and when the leading one was last seen
    ended: str | None  # "closed" or "expired" once the class is over

    @property
    def buttons(self) -> tuple:
        """What the buttons outside the poll depend on: a change reruns the page."""
        current = None if self.current is None else (self.current.number, self.current.revealed)
        return current, len(self.questions), self.lead.mine, self.ended


def snapshot(store: ClassStore, code: str, secret: str, screen: str) -> Snapshot:
    """The class now (raises ClassError when it cannot be read); records that the leading screen was seen."""
    info = store.info(code)
    questions = store.questions(code, secret)
    tallies = {q.number: store.tally(code, q.number, secret) for q in questions}
    current = next((q for q in questions if q.number == info.current), None)
    ended = "closed" if info.closed else "expired" if store.clock() >= info.expires else None
    return Snapshot(questions, tallies, current, store.lead(code, secret, screen), ended)


def teacher_view(store: ClassStore, code: str, secret: str, screen: str) -> None:
    show_message()
    FULL_RUN.set(None)  # a run cut short leaves the poll unsatisfied: it reruns the page
    try:
        now = snapshot(store, code, secret, screen)
    except ClassError as err:
        st.error(error_text(err))
        return
    if not now.lead.mine:
        led_elsewhere(code, secret, screen, now.lead)
    elif now.current is not None and not now.current.revealed:
        st.button(t("class.reveal"), type="primary", icon=":material/visibility:", key="class_reveal", on_click=_act,
                  args=("reveal", code, secret, screen, now.current.number))  # fmt: skip
    projector(code, secret, screen)
    st.divider()
    teacher_tools(now, code, secret, screen if now.lead.mine else None)
    watch_poll("class_projector_watch", RUN_EVERY_S)
    FULL_RUN.set(now.buttons)


def join_box(code: str) -> None:
    """The code, the join address and its QR code; a warning when no other machine can open the address."""
    st.html(f'<div class="class-code" {polled()} style="font:700 3.2rem monospace;letter-spacing:0.2em">{code}</div>')
    url, reachable = join_url(code)
    st.caption(t("class.join_at"))
    st.code(url, language=None, wrap_lines=True)
    if not reachable:
        st.warning(t("class.join_local_only"))
    png = cached_qr_png(url)
    if png is not None:
        st.image(png, width=220 if not is_presenting() else 300)


def _take_lead(code: str, secret: str, screen: str) -> None:
    try:
        class_store().lead(code, secret, screen, take=True)
    except ClassError as err:
        refused(err)


def led_elsewhere(code: str, secret: str, screen: str, lead: Lead) -> None:
    """A teacher screen that does not lead its class: what it cannot do, and the button that takes the lead."""
    ago = max(0, int(class_store().clock() - lead.seen))
    st.warning(t("class.led_elsewhere", seconds=ago))
    st.button(t("class.take_lead"), icon=":material/swap_horiz:", key="class_take_lead", on_click=_take_lead,
              args=(code, secret, screen))  # fmt: skip


@st.fragment(run_every=RUN_EVERY_S)
def projector(code: str, secret: str, screen: str) -> None:
    """The code and join address; the question on screen with its count, or after the reveal the class beside
    the model; the class's questions and the CSV: drawn whole from one read at every poll."""
    lang = current_lang()
    try:
        now = snapshot(class_store(), code, secret, screen)
    except ClassError as err:
        st.error(error_text(err))
        return
    if internals.is_fragment_run() and FULL_RUN.get() != now.buttons:
        st.rerun(scope="app")  # the buttons outside act on something else now
    left, right = st.columns([1, 2], gap="large")
    with left:
        join_box(code)
        if now.ended:
            st.warning(t(f"class.error_{now.ended}"))
    with right:
        on_screen(now, lang)
    question_list(now, code, lang)


def on_screen(now: Snapshot, lang: str) -> None:
    """The question on screen and its count; after the reveal, the class beside the model."""
    question = now.current
    if question is None:
        st.info(t("class.no_question_teacher"))
        for page in ASK_PAGES:
            st.page_link(page)
        return
    tally = now.tallies[question.number]
    st.markdown(f"**{t('class.question_number', n=question.number)}** {question_text(question.payload, lang)}")
    sentence(question)
    st.metric(t("class.answered"), tally.answered)
    if question.revealed:
        summary(question, tally.counts, None, lang)
        draw_reveal(REVEAL_KEY, question, tally.counts, None, lang)  # the students' reveal, the projector's scale


def question_list(now: Snapshot, code: str, lang: str) -> None:
    """The class's questions (the model's answer only once revealed) and the CSV export of the same read."""
    if not now.questions:
        return
    st.subheader(t("class.earlier"))
    rows = [{t("class.col_number"): q.number, t("class.col_question"): question_text(q.payload, lang, plain=True),
             t("class.col_model"): option_text(q.payload, q.answer, lang) if q.revealed else t("class.hidden"),
             t("class.col_answered"): now.tallies[q.number].answered,
             t("class.col_revealed"): "✓" if q.revealed else ""} for q in now.questions]  # fmt: skip
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.download_button(t("class.export"), data=export_csv(now.questions, now.tallies, lang),
                       file_name=f"class-{code}.csv", mime="text/csv", icon=":material/download:", on_click="ignore",
                       key="class_export")  # fmt: skip


def export_csv(questions, tallies, lang: str) -> bytes:
    buffer = io.StringIO()
    pd.DataFrame(export_rows(questions, tallies, lang)).to_csv(buffer, index=False)
    return buffer.getvalue().encode("utf-8-sig")  # the mark lets spreadsheets read Hangul


def teacher_tools(now: Snapshot, code: str, secret: str, screen: str | None) -> None:
    """The pages to ask the next question from, show a question again, the teacher key, end the class
    (``screen`` None: another screen leads)."""
    if now.current is not None:  # without one, the projector itself lists these pages
        st.caption(t("class.next_question"))
        for column, page in zip(st.columns(len(ASK_PAGES)), ASK_PAGES):
            column.page_link(page)
    if now.questions:
        c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
        number = c1.selectbox(t("class.reopen_which"), [q.number for q in now.questions],
                              index=len(now.questions) - 1, key="class_reopen_number")  # fmt: skip
        c2.button(t("class.reopen"), icon=":material/replay:", key="class_reopen", on_click=_act,
                  args=("reopen", code, secret, screen, number), disabled=screen is None)  # fmt: skip
    with st.expander(t("class.key_title")):
        st.caption(t("class.key_caption"))
        st.code(secret, language=None)
    st.button(t("class.close"), icon=":material/logout:", key="class_close", on_click=_act,
              args=("close", code, secret, screen, None), disabled=screen is None)  # fmt: skip


def _act(action: str, code: str, secret: str, screen: str, number: int | None) -> None:
    """The teacher's buttons: reveal, reopen (show again), close (refused when another screen took the lead)."""
    store = class_store()
    try:
        if action == "reveal":
            store.reveal(code, secret, number, screen)
        elif action == "reopen":
            store.reopen(code, secret, number, screen)
        else:
            store.close_class(code, secret, screen)
            session.CLASS_TEACHER.pop()
    except ClassError as err:
        refused(err)
