"""The Class page's common ground: the class store of this process, refusals as the user reads them, the
join address, and what both screens draw of a question (its sentence and the reveal's line; the reveal's numbers:
``ui.classroom.reveal_html``).

Who is who: a teacher is a browser session that holds a class's secret (``session.CLASS_TEACHER``,
never in the address) and a screen id of its own; of several teacher screens on one class one leads (it
started the class or took the lead with the key) and the others see the class but cannot change it. A
student is a browser whose own address holds the class code and a random student id
(``?code=…&me=…``), so a reload or a laptop waking from sleep comes back to the same answer.

Both screens are drawn by a fragment that polls (the projector every ``RUN_EVERY_S`` seconds, a student's screen
every ``STUDENT_EVERY_S``) and draws, from the store, everything that changes during a class
(``ui.classroom.student``, ``ui.classroom.teacher``), without a full page run: a count reaches the projector at
its next poll; a new question or the reveal is sent to the students' screens by the server at once
(``ui.classroom.push``); whatever a run sent that a page lost is sent again at the next poll. The page itself:
``ui.classroom.page``.
"""

from __future__ import annotations

import streamlit as st

from .. import session
from ..i18n import t
from ..markdown import md_escape
from ..presenter import figure_font_scale
from ..share import base_url, class_base, listening_address, network_address
from .questions import option_text
from .reveal_html import reveal_html
from .store import ClassError, ClassStore, Question, open_store, store_location

# how often a screen asks the store what changed (and draws it): a change reached 30 screens in p95 3.1-3.8 s
# polling every 2.0 s, 2.7-3.3 s every 1.5 s, 2.3-3.1 s every 1.0 s (tests/test_class_browser.py, one browser for 31 tabs).
# The projector polls every RUN_EVERY_S (its count follows the answers); a student's screen is sent a new question or
# the reveal at once (ui.classroom.push), so its poll, every STUDENT_EVERY_S, only brings what a push did not.
RUN_EVERY_S = 1.5
STUDENT_EVERY_S = 3.0
PAGE = "pages/class.py"
URL_PATH = "class"
CODE_PARAM, ME_PARAM = "code", "me"
ASK_PAGES = ("pages/attention.py", "pages/generate.py", "pages/classifier.py", "pages/head_atlas.py")


@st.cache_resource(show_spinner=False)
def _open(location: str) -> ClassStore:
    return open_store(location)


def class_store() -> ClassStore:
    """This process's store (one per location; raises ClassError when it cannot be opened)."""
    return _open(store_location())


ERROR_KEYS = {
    "unknown_code": "class.error_unknown_code",
    "expired": "class.error_expired",
    "closed": "class.error_closed",
    "not_teacher": "class.error_not_teacher",
    "not_leading": "class.error_not_leading",
    "rate_limited": "class.error_rate_limited",
    "too_many_joins": "class.error_too_many_joins",
    "too_many_answers": "class.error_too_many_answers",
    "class_full": "class.error_class_full",
    "too_many_questions": "class.error_too_many_questions",
    "not_current": "class.error_not_current",
    "revealed": "class.error_revealed",
    "bad_choice": "class.error_bad_choice",
    "no_question": "class.error_no_question",
    "unknown_student": "class.error_unknown_student",
    "store_unavailable": "class.error_store_unavailable",
    "store_read_only": "class.error_store_read_only",
}


def error_text(err: ClassError) -> str:
    """What the user is told about a refusal (plain Markdown, the detail escaped)."""
    return t(ERROR_KEYS[err.reason], detail=md_escape(err.detail))


def client_id() -> str:
    """The browser's network address (the first X-Forwarded-For hop behind the classroom proxy), for the
    wrong-code limit; "local" when there is none (a bare run)."""
    try:
        forwarded, address = st.context.headers.get("X-Forwarded-For"), st.context.ip_address
    except Exception:  # noqa: BLE001 - no browser context
        return "local"
    first = forwarded.split(",")[0].strip() if isinstance(forwarded, str) else None
    return next((v for v in (first, address) if isinstance(v, str) and v), "local")


def join_url(code: str) -> tuple[str, bool]:
    """(the address students open to join class ``code``, whether other machines can open it at all)."""
    base, reachable = class_base(base_url(), listening_address(), network_address())
    return f"{base.rstrip('/')}/{URL_PATH}?{CODE_PARAM}={code}", reachable


# Every action is a button callback: it runs before the next run, so no rerun of the page loses a click.
MESSAGE = session.value("_class_message")  # a refusal from the last callback, shown once


def refused(err: ClassError) -> None:
    MESSAGE.set(error_text(err))


def show_message() -> None:
    message = MESSAGE.pop()
    if message:
        st.error(message)


def draw_reveal(key: str, question: Question, counts: list[int], mine: int | None, lang: str) -> None:
    """The reveal's numbers (``ui.classroom.reveal_html``) in the container ``key``, at this screen's font scale;
    ``mine`` the reader's own answer (None: the projector, or no answer)."""
    with st.container(key=key):
        st.html(reveal_html(question.payload, question.reveal, question.answer, counts, mine, lang,
                            figure_font_scale()))  # fmt: skip


def sentence(question: Question) -> None:
    """The sentence the question is about, as plain text (never Markdown)."""
    if question.payload.get("text"):
        st.text(question.payload["text"])


def summary(question: Question, counts: list[int], mine: int | None, lang: str, student: bool = False) -> None:
    """The reveal's line: the model's answer, how many chose it, and (``student``) what this student chose."""
    model = md_escape(option_text(question.payload, question.answer, lang))
    right = counts[question.answer]
    line = t("class.summary", model=model, right=right, total=sum(counts))
    if mine is not None:
        line += " " + t("class.you_right" if mine == question.answer else "class.you_wrong",
                        yours=md_escape(option_text(question.payload, mine, lang)))  # fmt: skip
    elif student:
        line += " " + t("class.you_none")
    st.markdown(line)
