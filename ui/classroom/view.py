"""The Class page: the teacher's projector view and a student's screen, over the class store.

Who is who: a teacher is a browser session that holds a class's secret (``session.CLASS_TEACHER``,
never in the address) and a screen id of its own; of several teacher screens on one class one leads (it
started the class or took the lead with the key) and the others see the class but cannot change it. A
student is a browser whose own address holds the class code and a random student id
(``?code=…&me=…``), so a reload or a laptop waking from sleep comes back to the same answer.

Both screens poll the store with a small fragment every ``RUN_EVERY_S`` seconds: one read of what is on
screen (the question's number and whether it is revealed; the projector's count too) and nothing drawn
when it has not changed. Only a change (a new question, the reveal, a closed class) reruns the page, and
that run draws the question, the answer buttons and the reveal figure; a second run a poll later draws
them again (``redraw_needed``). A student's screen so receives its figure twice per change, not at every
poll.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import secrets
import time
from collections.abc import Iterator

import pandas as pd
import streamlit as st

from .. import session
from .. import streamlit_internals as internals
from ..charts import show
from ..figure_cache import SharedFigure
from ..i18n import current_lang, t
from ..markdown import md_escape
from ..presenter import figure_font_scale, is_presenting
from ..share import base_url, cached_qr_png, class_base, network_address
from .figures import reveal_figure
from .questions import export_rows, option_text, question_text
from .store import NICKNAME_MAX, ClassError, ClassStore, Lead, Question, normalize_code, open_store, store_location

RUN_EVERY_S = 2.0  # how often a screen asks the store what changed
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


def join_url(code: str) -> str:
    base, _ = class_base(base_url(), st.get_option("server.address"), network_address())
    return f"{base.rstrip('/')}/{URL_PATH}?{CODE_PARAM}={code}"


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
# Every action is a button callback: it runs before the next run, so no rerun of the page loses a click.
MESSAGE = session.value("_class_message")  # a refusal from the last callback, shown once
JOIN_CODE, JOIN_NAME = "class_join_code", "class_join_name"
RESUME_CODE, RESUME_KEY = "class_resume_code", "class_resume_key"


def _refused(err: ClassError) -> None:
    MESSAGE.set(error_text(err))


def _join() -> None:
    typed = session.value(JOIN_CODE).get() or ""
    try:
        student = class_store().join(typed, client_id(), nickname=session.value(JOIN_NAME).get())
    except ClassError as err:
        _refused(err)
        return
    st.query_params[CODE_PARAM] = normalize_code(typed)
    st.query_params[ME_PARAM] = student


def new_screen() -> str:
    """A teacher screen's own id (kept in its browser session, like the secret)."""
    return secrets.token_urlsafe(9)


def _start() -> None:
    screen = new_screen()
    try:
        code, secret = class_store().start_class(current_lang(), screen=screen)
    except ClassError as err:
        _refused(err)
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
        _refused(err)
        return
    session.CLASS_TEACHER.set({"code": code, "secret": key, "screen": screen})


def _take_lead(code: str, secret: str, screen: str) -> None:
    try:
        class_store().lead(code, secret, screen, take=True)
    except ClassError as err:
        _refused(err)


def show_message() -> None:
    message = MESSAGE.pop()
    if message:
        st.error(message)


def landing(store: ClassStore, code: str) -> None:
    show_message()
    join, teach = st.columns([3, 2], gap="large")
    with join:
        st.subheader(t("class.join_title"))
        if code and not session.value(JOIN_CODE).is_set:
            session.value(JOIN_CODE).set(code)
        with st.form("class_join"):
            st.text_input(t("class.code"), max_chars=12, placeholder="ABC123", key=JOIN_CODE)
            st.text_input(t("class.nickname"), max_chars=NICKNAME_MAX, help=t("class.nickname_help"), key=JOIN_NAME)
            st.form_submit_button(t("class.join"), type="primary", icon=":material/login:", on_click=_join,
                                  key="class_join_go")  # fmt: skip
    with teach:
        st.subheader(t("class.teach_title"))
        st.caption(t("class.teach_caption"))
        st.button(t("class.start"), icon=":material/co_present:", key="class_start", on_click=_start)
        with st.expander(t("class.resume_title")):
            with st.form("class_resume"):
                st.text_input(t("class.code"), max_chars=12, key=RESUME_CODE)
                st.text_input(t("class.teacher_key"), type="password", max_chars=64, key=RESUME_KEY)
                st.form_submit_button(t("class.resume"), on_click=_resume, key="class_resume_go")


# ---- the teacher ----------------------------------------------------------------------------------------------------
def teacher_view(store: ClassStore, code: str, secret: str, screen: str) -> None:
    show_message()
    info = store.info(code)
    lead = store.lead(code, secret, screen)
    left, right = st.columns([1, 2], gap="large")
    with left:
        st.html(f'<div class="class-code" style="font:700 3.2rem monospace;letter-spacing:0.2em">{code}</div>')
        url = join_url(code)
        st.caption(t("class.join_at"))
        st.code(url, language=None, wrap_lines=True)
        png = cached_qr_png(url)
        if png is not None:
            st.image(png, width=220 if not is_presenting() else 300)
        if info.closed or store.clock() >= info.expires:
            st.warning(t("class.error_closed" if info.closed else "class.error_expired"))
    with right:
        if not lead.mine:
            led_elsewhere(code, secret, screen, lead)
        projector(store, code, secret, screen)
        if lead.mine:
            reveal_button(store, code, secret, screen, info.current)
    st.divider()
    earlier_questions(store, code, secret, screen if lead.mine else None)
    teacher_tools(store, code, secret, screen if lead.mine else None)


def led_elsewhere(code: str, secret: str, screen: str, lead: Lead) -> None:
    """A teacher screen that does not lead its class: what it cannot do, and the button that takes the lead."""
    ago = max(0, int(class_store().clock() - lead.seen))
    st.warning(t("class.led_elsewhere", seconds=ago))
    st.button(t("class.take_lead"), icon=":material/swap_horiz:", key="class_take_lead", on_click=_take_lead,
              args=(code, secret, screen))  # fmt: skip


def on_screen(store: ClassStore, code: str, teacher: tuple[str, str] | None = None) -> tuple | str:
    """What a screen shows of class ``code``: ((question number, revealed) or None without a question,
    whether this teacher screen leads the class (``teacher`` = (secret, screen)); None for a student), or the
    reason the class cannot be read (closed, expired, ...)."""
    try:
        question = store.current(code)
        leads = None if teacher is None else store.lead(code, *teacher).mine
    except ClassError as err:
        return err.reason
    return None if question is None else (question.number, question.revealed), leads


DRAWN = session.value("_class_drawn")  # Drawn(shown, runs, ended) of this screen's last complete run; None while one
# is drawing, so that a run cut short leaves the poll unsatisfied
RUNS_PER_CHANGE = 2  # complete runs that draw each change, the second ≥ QUIET_S after the first ended
QUIET_S = 1.5


@dataclasses.dataclass(frozen=True)
class Drawn:
    shown: object  # on_screen's value
    runs: int  # complete runs in a row that drew it
    ended: float  # when the last of them ended (time.monotonic())


@contextlib.contextmanager
def drawing(shown) -> Iterator[None]:
    """Around a page's full run: DRAWN is None until the run's last element is sent, then records it."""
    before = DRAWN.get()
    runs = before.runs + 1 if isinstance(before, Drawn) and before.shown == shown else 1
    DRAWN.set(None)
    yield
    DRAWN.set(Drawn(shown, runs, time.monotonic()))


def redraw_needed(now) -> bool:
    """Whether the screen must rerun the page to show ``now`` (on_screen's value). Each change is drawn by two
    complete runs, the second at a poll at least QUIET_S after the first ended: in the 30-student test a few
    screens whose one run after the reveal was complete on the server never received its figure (each time a
    poll queued during that run followed it at once); the second run sends the figure again."""
    drawn = DRAWN.get()
    if not isinstance(drawn, Drawn) or drawn.shown != now:
        return True
    return drawn.runs < RUNS_PER_CHANGE and time.monotonic() - drawn.ended >= QUIET_S


@st.fragment(run_every=RUN_EVERY_S)
def follow(
    code: str, student: str | None = None, count: int | None = None, teacher: tuple[str, str] | None = None
) -> None:
    """The poll: every RUN_EVERY_S one read of the store; the page reruns when what is on screen is not what
    this screen's last complete run drew (a new question, the reveal; or a run cut short before its end, which
    the next poll then repeats), or when a student's answer that waited for the store has now been saved. With
    ``count`` (the projector, before the reveal) it also shows how many have answered; no choice is told.
    ``teacher`` ((secret, screen), a teacher's screen) adds whether this screen leads the class to what it compares,
    and records that the leading screen was seen."""
    store = class_store()
    if internals.is_fragment_run():  # the poll itself (in a page's full run the body only draws the count)
        sent = student is not None and bool(session.CLASS_PENDING.get()) and send_pending(student) is None
        now = on_screen(store, code, teacher)
        if sent or redraw_needed(now):
            st.rerun(scope="app")
    if count is not None:
        try:
            st.metric(t("class.answered"), store.answered(code, count))
        except ClassError as err:
            st.error(error_text(err))


def projector(store: ClassStore, code: str, secret: str, screen: str) -> None:
    """The question on screen: how many have answered (polled); after the reveal, the class beside the model."""
    teacher = (secret, screen)
    with drawing(on_screen(store, code, teacher)):  # a run cut short is repeated by the next poll
        _projector(store, code, secret, teacher)


def _projector(store: ClassStore, code: str, secret: str, teacher: tuple[str, str]) -> None:
    lang = current_lang()
    try:
        info = store.info(code)
        questions = store.questions(code, secret) if info.current else []
    except ClassError as err:
        st.error(error_text(err))
        follow(code, teacher=teacher)
        return
    current = next((q for q in questions if q.number == info.current), None)
    if current is None:
        st.info(t("class.no_question_teacher"))
        for page in ASK_PAGES:
            st.page_link(page)
        follow(code, teacher=teacher)
        return
    st.markdown(f"**{t('class.question_number', n=current.number)}** {question_text(current.payload, lang)}")
    sentence(current)
    if not current.revealed:
        follow(code, count=current.number, teacher=teacher)
        return
    follow(code, teacher=teacher)
    tally = store.tally(code, current.number, secret)
    st.metric(t("class.answered"), tally.answered)
    summary(current, tally.counts, None, lang)
    fig = cached_reveal(current, tuple(tally.counts), None, lang, figure_font_scale())
    show(fig, filename=f"class-{code}-q{current.number}", key="class_reveal_fig")


def reveal_button(store: ClassStore, code: str, secret: str, screen: str, number: int | None) -> None:
    """Outside the polling fragment: a click on a button inside a fragment that reruns every 2 s can be
    lost when the click's run and a timed run meet; a click here starts a full run, which nothing drops."""
    if number is None or next((q.revealed for q in store.questions(code, secret) if q.number == number), True):
        return
    st.button(t("class.reveal"), type="primary", icon=":material/visibility:", key="class_reveal", on_click=_act,
              args=("reveal", code, secret, screen, number))  # fmt: skip


def cached_reveal(question: Question, counts: tuple[int, ...], mine: int | None, lang: str, scale: float):
    """The reveal figure, built once per question, counts, reader's answer, language and font scale and
    shared by every session: building one takes ~0.3 s of CPU, and after the reveal every student's
    screen redraws it at each poll (the counts no longer change then)."""
    payload = json.dumps(question.payload, sort_keys=True, ensure_ascii=False)
    return _reveal(payload, json.dumps(question.reveal, sort_keys=True), question.answer, counts, mine, lang, scale)


@st.cache_resource(max_entries=512, show_spinner=False)
def _reveal(payload: str, reveal: str, answer: int, counts: tuple[int, ...], mine: int | None, lang: str, scale: float):
    fig = reveal_figure(json.loads(payload), json.loads(reveal), answer, list(counts), mine, lang, scale)
    return SharedFigure(fig.to_dict())  # never modified again: every session sends the same spec


def sentence(question: Question) -> None:
    """The sentence the question is about, as plain text (never Markdown)."""
    if question.payload.get("text"):
        st.text(question.payload["text"])


def summary(question: Question, counts: list[int], mine: int | None, lang: str) -> None:
    model = md_escape(option_text(question.payload, question.answer, lang))
    right = counts[question.answer]
    line = t("class.summary", model=model, right=right, total=sum(counts))
    if mine is not None:
        line += " " + t("class.you_right" if mine == question.answer else "class.you_wrong",
                        yours=md_escape(option_text(question.payload, mine, lang)))  # fmt: skip
    st.markdown(line)


def earlier_questions(store: ClassStore, code: str, secret: str, screen: str | None) -> None:
    """The class's questions, the CSV export and (``screen``: a leading teacher screen) reopening one."""
    lang = current_lang()
    questions = store.questions(code, secret)
    if not questions:
        return
    st.subheader(t("class.earlier"))
    rows = [{t("class.col_number"): q.number, t("class.col_question"): question_text(q.payload, lang, plain=True),
             t("class.col_model"): option_text(q.payload, q.answer, lang) if q.revealed else t("class.hidden"),
             t("class.col_answered"): store.answered(code, q.number),
             t("class.col_revealed"): "✓" if q.revealed else ""} for q in questions]  # fmt: skip
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    c1, c2, c3 = st.columns([2, 1, 2], vertical_alignment="bottom")
    number = c1.selectbox(t("class.reopen_which"), [q.number for q in questions], index=len(questions) - 1,
                          key="class_reopen_number")  # fmt: skip
    c2.button(t("class.reopen"), icon=":material/replay:", key="class_reopen", on_click=_act,
              args=("reopen", code, secret, screen, number), disabled=screen is None)  # fmt: skip
    tallies = {q.number: store.tally(code, q.number, secret) for q in questions}
    c3.download_button(t("class.export"), data=export_csv(questions, tallies, lang), file_name=f"class-{code}.csv",
                       mime="text/csv", icon=":material/download:", on_click="ignore", key="class_export")  # fmt: skip


def export_csv(questions, tallies, lang: str) -> bytes:
    buffer = io.StringIO()
    pd.DataFrame(export_rows(questions, tallies, lang)).to_csv(buffer, index=False)
    return buffer.getvalue().encode("utf-8-sig")  # the mark lets spreadsheets read Hangul


def teacher_tools(store: ClassStore, code: str, secret: str, screen: str | None) -> None:
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
        _refused(err)


# ---- a student ------------------------------------------------------------------------------------------------------
def pick_key(code: str, number: int) -> str:
    return f"class_pick_{code}_{number}"


def _picked(code: str, student: str, number: int) -> None:
    """The answer widget's callback: the choice goes to the store, or waits as pending (retried at the
    next poll) when the store cannot take it now."""
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
    """A student's screen: drawn when the question on screen changes, twice (``follow`` polls for it)."""
    store = class_store()
    send_pending(student)
    with drawing(on_screen(store, code)):  # a run cut short (before its figure, say) is repeated by the next poll
        follow(code, student=student)
        _student_view(store, code, student)


def _student_view(store: ClassStore, code: str, student: str) -> None:
    lang = current_lang()
    try:
        question = store.current(code)
    except ClassError as err:
        st.error(error_text(err))
        return
    name = store.nickname(code, student)
    if name is None:
        st.error(t("class.error_unknown_student"))
        return
    st.caption(t("class.you_are", name=md_escape(name)) if name else t("class.you_no_name", code=code))
    if question is None or not question.revealed:
        load_chart_code()
    if question is None:
        st.info(t("class.waiting"))
        return
    st.markdown(f"**{t('class.question_number', n=question.number)}** {question_text(question.payload, lang)}")
    sentence(question)
    answer_box(code, student, question, lang)
    if not question.revealed:
        return
    stored = store.my_answer(code, student, question.number)
    tally = store.tally(code, question.number)
    summary(question, tally.counts, stored, lang)
    fig = cached_reveal(question, tuple(tally.counts), stored, lang, figure_font_scale())
    show(fig, filename=f"class-q{question.number}", key="class_student_fig")


PRELOAD_KEY = "class_preload"
PRELOAD_META = "class-preload"


@st.cache_resource(show_spinner=False)
def _empty_figure() -> SharedFigure:
    return SharedFigure({"data": [], "layout": {"meta": PRELOAD_META, "height": 10}})


def load_chart_code() -> None:
    """A hidden empty chart while the student waits: the browser fetches its chart code (a 4.6 MB bundle, once
    per browser) when the student joins, not at the reveal, when a whole class would fetch it at the same moment
    over the classroom's network (in the 30-student test, the reveal waited on exactly that)."""
    with st.container(key=PRELOAD_KEY):
        st.html(f"<style>.st-key-{PRELOAD_KEY} {{ display: none; }}</style>")
        st.plotly_chart(_empty_figure(), key="class_preload_fig", config={"displayModeBar": False})


@st.fragment
def answer_box(code: str, student: str, question: Question, lang: str) -> None:
    """The answer buttons: a click reruns only this box (the answer goes to the store in the callback)."""
    failed = send_pending(student)
    stored = class_store().my_answer(code, student, question.number)
    key = pick_key(code, question.number)
    widget = session.value(key)
    if not widget.is_set or (question.revealed and stored is not None):
        widget.set(stored)
    st.pills(t("class.your_answer"), list(range(question.options)), selection_mode="single", key=key,
             format_func=lambda i: md_escape(option_text(question.payload, i, lang)), disabled=question.revealed,
             on_change=_picked, args=(code, student, question.number))  # fmt: skip
    if failed is not None:
        st.warning(error_text(failed))
    if not question.revealed:
        st.caption(t("class.saved" if stored is not None else "class.not_yet", time=int(RUN_EVERY_S)))
