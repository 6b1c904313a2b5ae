"""A student's screen on the Class page: drawn whole at every poll from what the store holds.

The screen is one ``st.fragment(run_every=STUDENT_EVERY_S)`` (:func:`student_screen`): every run reads the
question on screen, this student's stored answer and (after the reveal) the class's tally, and draws all
of it (the question, the answer buttons or, once revealed, the reveal's line and its numbers). Nothing waits
for a full page run, so an element that a run sent and the page lost is sent again at the next poll. A new
question or the reveal does not wait for the poll: the server runs the screen as soon as it sees the change
(``ui.classroom.push``); the poll brings it when that did not. The answer buttons always show the stored answer (or the
one waiting for the store): the screen never shows a choice the store does not hold.

The reveal's numbers are light HTML (``ui.classroom.reveal_html``), not a chart: drawing a Plotly figure
cost each tab about 0.8 s of browser CPU at the moment of the reveal (24 s for 30 tabs on the 2-core test
machine). The Class page draws no chart, so none of the chart code is loaded there. At the reveal the answer
buttons make way for it (the reveal's line names the student's answer, its table marks it): drawing 15 buttons
again as disabled was the largest part of a tab's work at that moment (10 tabs, a copy of the screen outside
the app: 2.1-2.3 s of browser CPU with them, 1.5 s without).
"""

from __future__ import annotations

import html

import streamlit as st

from .. import session
from .. import streamlit_internals as internals
from ..i18n import current_lang, t
from ..markdown import md_escape
from . import push
from .poll_watch import polled, watch_poll
from .questions import option_text, question_text
from .store import ClassError, Question
from .view import STUDENT_EVERY_S, class_store, draw_reveal, error_text, sentence, summary

REVEAL_KEY = "class_student_reveal"  # the reveal's container (the browser test waits for it on every screen)


def pick_key(code: str, number: int) -> str:
    return f"class_pick_{code}_{number}"


def _picked(code: str, student: str, number: int) -> None:
    """The answer buttons' callback: the choice goes to the store, or waits as pending (retried at the
    next poll) when the store cannot take it now. A click on the chosen answer again (which would clear the
    buttons) changes nothing: the run that follows selects the stored answer again."""
    choice = session.value(pick_key(code, number)).get()
    if choice is None:
        return
    session.CLASS_PENDING.set({"code": code, "number": number, "choice": int(choice)})
    send_pending(student)


def send_pending(student: str) -> ClassError | None:
    pending = session.CLASS_PENDING.get()
    if not pending:
        return None
    try:
        class_store().answer(pending["code"], student, pending["number"], pending["choice"])
    except ClassError as err:
        if err.reason not in ("store_unavailable", "store_read_only"):
            session.CLASS_PENDING.pop()  # refused for good (revealed, closed, cap): nothing to retry
        return err
    session.CLASS_PENDING.pop()
    return None


def student_view(code: str, student: str) -> None:
    """A student's page: the polled screen, and the watch that runs the page again if its poll stops."""
    student_screen(code, student)
    watch_poll("class_student_watch", STUDENT_EVERY_S)


def plain_line(text: str) -> None:
    """A caption of plain text: a nickname in it is shown as typed (no Markdown, no HTML, no autolinked
    address: HTML-escaped text in an element that no Markdown parser reads). It carries the poll's mark
    (``ui.classroom.poll_watch``)."""
    st.html(f'<p class="class-plain" {polled()} style="font-size:0.875rem;opacity:0.7;margin:0">'
            f"{html.escape(text)}</p>")  # fmt: skip


@st.fragment(run_every=STUDENT_EVERY_S)
def student_screen(code: str, student: str) -> None:
    """Everything a student sees, from the store, at every poll (and at once after a click)."""
    store, lang = class_store(), current_lang()
    failed = send_pending(student)
    try:
        question = store.current(code)
        name = store.nickname(code, student)
        stored = None if question is None else store.my_answer(code, student, question.number)
        tally = store.tally(code, question.number) if question is not None and question.revealed else None
    except ClassError as err:
        push.showing(store, code, err)
        st.error(error_text(err))
        return
    push.showing(store, code, question)  # the server runs this screen again as soon as the class changes
    if name is None:
        st.error(t("class.error_unknown_student"))
        return
    plain_line(t("class.you_are", name=name) if name else t("class.you_no_name", code=code))
    if question is None:
        st.info(t("class.waiting"))
        return
    st.markdown(f"**{t('class.question_number', n=question.number)}** {question_text(question.payload, lang)}")
    sentence(question)
    if not question.revealed:  # after the reveal the line below names the answer and the reveal marks it
        answer_box(code, student, question, stored, lang)
    if failed is not None:
        st.warning(error_text(failed))
    if tally is None:
        st.caption(t("class.saved" if stored is not None else "class.not_yet"))
        return
    summary(question, tally.counts, stored, lang, student=True)
    draw_reveal(REVEAL_KEY, question, tally.counts, stored, lang)


def shown_choice(code: str, question: Question, stored: int | None) -> int | None:
    """What the answer buttons show: the answer waiting for the store (this question's), else the stored one."""
    pending = session.CLASS_PENDING.get()
    if pending and pending["code"] == code and pending["number"] == question.number:  # drawn only before the reveal
        return pending["choice"]
    return stored


BOXES = session.value("_class_answer_boxes")  # the answer boxes this browser session has drawn (their keys)


def answer_box(code: str, student: str, question: Question, stored: int | None, lang: str) -> None:
    """The answer buttons, showing exactly what the store holds; a click reruns the screen (the answer goes
    to the store in the callback first).

    A session's first drawing of a box takes what the browser holds: after a replica restarted, a page that
    reconnects brings the choice on its screen (perhaps clicked while it reconnected, which no callback of the
    new session receives): a choice the store does not have is stored then; a page that holds none (a reload)
    is drawn again at once with the stored answer."""
    key = pick_key(code, question.number)
    widget, want, drawn = session.value(key), shown_choice(code, question, stored), BOXES.get() or frozenset()
    first = key not in drawn
    if not first and (not widget.is_set or widget.get() != want):
        widget.set(want)
    chosen = st.pills(t("class.your_answer"), list(range(question.options)), selection_mode="single", key=key,
                      format_func=lambda i: md_escape(option_text(question.payload, i, lang)),
                      on_change=_picked, args=(code, student, question.number))  # fmt: skip
    if not first:
        return
    BOXES.set(drawn | {key})
    if chosen != want:
        if chosen is not None and not question.revealed:
            session.CLASS_PENDING.set({"code": code, "number": question.number, "choice": int(chosen)})
            send_pending(student)
        st.rerun(scope="fragment" if internals.is_fragment_run() else "app")
