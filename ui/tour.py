"""The suggested lesson and its guided tour.

:data:`LESSON` lists the steps in teaching order: the page each one opens, the address
parameters that put the page in the step's state, and the widget keys the tour highlights.
The Start page links to every step; the tour walks through them one page at a time, showing
a panel above the page and outlining the step's controls (CSS on Streamlit's ``st-key-<key>``
classes, so nothing is fetched and no script runs). The tour's place is kept in the session,
so a student can leave it and resume at the same step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from . import session
from .i18n import current_lang, t
from .navigation import remember
from .presenter import PRESENT_KEY, is_presenting
from .session import MODEL_WIDGET

STEP_KEY = "_tour_step"  # 0-based index into the visible lesson; kept after leaving, for resuming
ACTIVE_KEY = "_tour_active"
PAGES_KEY = "_tour_pages"
PENDING_KEY = "_tour_pending"  # a button chose a step: open its page
HIGHLIGHT = "#C2410C"  # the theme's primary colour


@dataclass(frozen=True)
class Step:
    """One lesson step: ``page`` (a script under pages/), its address state, what to highlight."""

    page: str
    title_key: str
    body_key: str
    summary_key: str
    query: dict[str, str] = field(default_factory=dict)
    highlight: tuple[str, ...] = ()
    optional: bool = False  # shown only when the page exists (pages added later)
    query_ko: dict[str, str] = field(default_factory=dict)  # what changes in Korean (a sentence for the Korean model)
    needs: str = ""  # what the step teaches that a model may lack (FEATURES): a default without it gives way


def _step(page: str, texts: tuple[str, str, str], query=None, highlight=(), ko=None, **options) -> Step:
    """A step on ``pages/<page>.py`` with its (title, body, summary) catalogue keys."""
    return Step(f"pages/{page}.py", *texts, query or {}, highlight, query_ko=ko or {}, **options)


# the sentences the steps open with: English, and Korean for the Korean model
GREAT = {"text": "the movie was great"}, {"text": "영화가 정말 좋았다"}
NOT_BAD = {"text": "Not bad at all , the film was good"}, {"text": "나쁘지 않았다 오히려 재미있었다"}

LESSON = (
    # a made-up word is cut into known pieces; a character the vocabulary lacks becomes the unknown token
    _step(
        "playground",
        ("tour.tokens_title", "tour.tokens_body", "start.step_tokens"),
        {"text": "The movie was not good, but the zzqxv ✈ soundtrack was great."},
        ("text",),
        {"text": "영화는 별로였지만 ✈ 음악은 최고였다"},
    ),
    _step(
        "positional_encoding",
        ("tour.positions_title", "tour.positions_body", "start.step_positions"),
        GREAT[0],
        ("pe_d_model", "pe_length", "pe_base"),
        GREAT[1],
        needs="sinusoidal",
    ),
    _step(
        "masks",
        ("tour.one_head_title", "tour.one_head_body", "start.step_one_head"),
        {"text": "the movie was not good", "mask_view": "step"},
        ("mask_layer", "mask_head", "mask_fill"),
        {"text": "영화가 재미없었다"},
    ),
    # one sentence: the page then offers (outlined) to add two shorter ones, so that padding shows
    _step(
        "masks",
        ("tour.masks_title", "tour.masks_body", "start.step_masks"),
        {**GREAT[0], "mask_view": "padding"},
        ("text", "mask_pad_demo", "mask_view"),
        GREAT[1],
    ),
    _step(
        "attention",
        ("tour.heads_title", "tour.heads_body", "start.step_heads"),
        {"text": "The plot was boring but the acting was great", "layer": "2", "head": "3"},
        ("view", "layer", "head"),
        {"text": "줄거리는 지루했지만 연기는 훌륭했다"},
    ),
    # a two-class model has no class box: the slider first
    _step(
        "classifier",
        ("tour.why_title", "tour.why_body", "start.step_why"),
        NOT_BAD[0],
        ("classifier_steps", "classifier_target"),
        NOT_BAD[1],
    ),
    _step(
        "classifier",
        ("tour.heads_off_title", "tour.heads_off_body", "start.step_heads_off"),
        NOT_BAD[0],
        ("classifier_off_0", "classifier_rank"),
        NOT_BAD[1],
    ),
    _step(
        "checkpoints",
        ("tour.own_model_title", "tour.own_model_body", "start.step_own_model"),
        highlight=("ckpt_file", "ckpt_vocab"),
    ),
    _step(
        "translate",
        ("tour.translate_title", "tour.translate_body", "start.step_translate"),
        highlight=("tr_layer", "tr_head"),
        optional=True,
    ),
    # the step navigator sits right above the step's figures: the tour scrolls them into view
    _step(
        "generate",
        ("tour.generate_title", "tour.generate_body", "start.step_generate"),
        {"gen_prompt": "This movie was"},
        ("gen_step",),
        {"gen_prompt": "대한민국의 수도는 바로"},  # Korean opens on Gemma 3, which knows the answer (" 서울")
        optional=True,
    ),
    _step(
        "vision",
        ("tour.vision_title", "tour.vision_body", "start.step_vision"),
        highlight=("vlayer", "vhead"),
        optional=True,
    ),
)

FEATURE_KEYS = {"sinusoidal": "tour.feature_sinusoidal"}  # what a step may need, as the note names it
COURSE_MODEL = "imdb-sentiment"  # the model the course notebooks build: sinusoidal positions, <unk>
TEXT_MODEL_PAGES = ("playground", "positional_encoding", "masks", "attention", "classifier")  # read the sidebar's model


def has_feature(model: str, feature: str) -> bool:
    """True when bundled ``model`` has ``feature`` ("sinusoidal": sinusoidal positions), read from its
    config.json (a Hugging Face folder's has no ``positional``: its positions are learned)."""
    from .models import model_folder

    try:
        config = json.loads((model_folder(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return {"sinusoidal": config.get("positional") == "sinusoidal"}.get(feature, True)


def step_model(step: Step, lang: str) -> tuple[str | None, bool]:
    """The model a step opens in ``lang`` (None: a page without the sidebar's model) and whether it is the
    course-sized model standing in for a default that lacks what the step teaches."""
    from .models import default_model

    if Path(step.page).stem not in TEXT_MODEL_PAGES:
        return None, False
    default = default_model(lang)
    if step.needs and not has_feature(default, step.needs) and has_feature(COURSE_MODEL, step.needs):
        return COURSE_MODEL, True
    return default, False


def model_note(step: Step, lang: str) -> str:
    """One line when the step opens the course-sized model instead of the default (empty otherwise)."""
    from .i18n import translate
    from .models import default_model

    model, stand_in = step_model(step, lang)
    if not stand_in:
        return ""
    feature = translate(FEATURE_KEYS[step.needs], lang)
    return translate("tour.course_model", lang, model=model, feature=feature, default=default_model(lang))


def register_pages(url_paths: list[str]) -> None:
    """The shell tells which pages its navigation holds (pages added later join the lesson)."""
    session.value(PAGES_KEY).set(tuple(url_paths))


def lesson_for_pages(pages) -> list[Step]:
    """The steps whose page is among ``pages`` (url paths such as "translate"), in order."""
    return [step for step in LESSON if not step.optional or Path(step.page).stem in pages]


def lesson() -> list[Step]:
    """The steps whose page is in this app's navigation, in order."""
    return lesson_for_pages(session.value(PAGES_KEY).get(()))


def step_query(step: Step) -> dict[str, str]:
    """The address of ``step``: its own state (and model) plus this session's language and presenter mode."""
    lang = current_lang()
    query = {"lang": lang, **step_state(step)}
    if is_presenting():
        query[PRESENT_KEY] = "1"
    return query


def highlight_css(keys: tuple[str, ...]) -> str:
    """A <style> block outlining the widgets with these keys (Streamlit gives each a ``st-key-<key>`` class)."""
    if not keys:
        return ""
    selectors = ", ".join(f".st-key-{key}" for key in keys)
    return (
        f"<style>{selectors} {{ outline: 4px solid {HIGHLIGHT}; outline-offset: 6px; border-radius: 6px; "
        f"box-shadow: 0 0 0 12px rgba(194, 65, 12, 0.12); }}</style>"
    )


SCROLLED_KEY = "_tour_scrolled"  # the step whose controls were last scrolled to: once per arrival

# Streamlit draws a page in pieces, so the outlined control may appear a few seconds after this script:
# look for it for up to 30 s and bring it to the middle of the screen; for 20 s more, bring it back whenever
# figures drawn above it push it off the screen, until the student scrolls, clicks or types.
SCROLL_SCRIPT = """<script>
(() => {
  const selector = %s;
  let tries = 0, watched = 0, left = false;
  const leave = () => { left = true; };
  for (const kind of ["wheel", "touchstart", "keydown", "mousedown"]) {
    window.addEventListener(kind, leave, {once: true, capture: true});
  }
  const offScreen = (el) => {
    const box = el.getBoundingClientRect();
    return box.top < 0 || box.bottom > window.innerHeight;
  };
  const timer = setInterval(() => {
    const target = document.querySelector(selector);
    if (!target) {
      if (++tries > 120) clearInterval(timer);
      return;
    }
    if (left || ++watched > 80) { clearInterval(timer); return; }
    if (watched === 1 || offScreen(target)) target.scrollIntoView({block: "center"});
  }, 250);
})();
</script>"""


def scroll_script(keys: tuple[str, ...]) -> str:
    """A script that scrolls the first of these widgets on the page (by ``st-key-<key>`` class) into view."""
    return SCROLL_SCRIPT % json.dumps(", ".join(f".st-key-{key}" for key in keys))


def first_arrival(index: int) -> bool:
    """True once per arrival at step ``index``: the tour scrolls to its controls then, not on every rerun
    (which would pull the page back while the student works further down)."""
    if session.value(SCROLLED_KEY).get() == index:
        return False
    session.value(SCROLLED_KEY).set(index)
    return True


def outline(step: Step, scroll) -> None:
    """The step's one-line model note (when it opens the course-sized model), its controls outlined and,
    when ``scroll()`` says so, scrolled into view."""
    if note := model_note(step, current_lang()):
        st.caption(note)
    if not step.highlight:
        return
    if scroll():
        st.html(highlight_css(step.highlight) + scroll_script(step.highlight), unsafe_allow_javascript=True)
    else:
        st.html(highlight_css(step.highlight))


LINK_PARAM = "lesson"  # on a lesson link: the step's number (1-based), read once on arrival


def link_query(number: int, step: Step) -> dict[str, str]:
    """The address of lesson link ``number`` (1-based): the step's state and its number, so that the
    page it opens lands on the step's controls (:func:`land_on_step`)."""
    return {**step_query(step), LINK_PARAM: str(number)}


def linked_step(url_path: str) -> Step | None:
    """The lesson step whose link opened this page (``?lesson=N`` naming a step of this page), once:
    the number leaves the address, so a reload or a shared link opens the page at its top."""
    raw = st.query_params.get(LINK_PARAM)
    if raw is None:
        return None
    del st.query_params[LINK_PARAM]
    steps = lesson()
    if not raw.isdigit() or not 1 <= int(raw) <= len(steps):
        return None
    step = steps[int(raw) - 1]
    return step if Path(step.page).stem == url_path else None


def land_on_step(url_path: str) -> None:
    """Called by the shell before the page: a lesson link's page scrolls to the step's controls and
    outlines them, as the tour does."""
    step = linked_step(url_path)
    if step is not None:
        outline(step, scroll=lambda: True)


def go_to_step(index: int) -> None:
    """Button callback: put the tour at step ``index`` (0-based) and open its page on the next run.

    A callback, not an ``if st.button(...)``: a run that Streamlit repeats (see
    ``ui.navigation.ensure_shell``) would lose the click.
    """
    session.value(STEP_KEY).set(max(0, min(index, len(lesson()) - 1)))
    session.value(ACTIVE_KEY).set(True)
    session.value(SCROLLED_KEY).pop()
    session.value(PENDING_KEY).set(True)


def leave_tour() -> None:
    """Hide the tour; its step is kept so that it can be resumed."""
    session.value(ACTIVE_KEY).set(False)


def finish_tour() -> None:
    """The last step is done: hide the tour and forget its place."""
    session.value(ACTIVE_KEY).set(False)
    session.value(STEP_KEY).pop()


def tour_active() -> bool:
    """True while the guided tour is on (its panel shows)."""
    return bool(session.value(ACTIVE_KEY).get())


def tour_step() -> int | None:
    """The step the tour is at (0-based), whether active or left; None if never started."""
    return session.value(STEP_KEY).get()


def step_state(step: Step) -> dict[str, str | int]:
    """The step's widget values in this session's language (``query_ko`` in Korean) and its model (see
    :func:`step_model`), typed as the widgets hold them (layer and head are numbers)."""
    lang = current_lang()
    query = {**step.query, **(step.query_ko if lang == "ko" else {})}
    model, _ = step_model(step, lang)
    if model is not None:  # the default, or the course-sized model where the default lacks what is taught
        query[MODEL_WIDGET] = model
    return {key: int(value) if value.isdigit() else value for key, value in query.items()}


def follow_tour() -> None:
    """Called by the shell after ``st.navigation``: open the page of a step a button just chose.

    The step's values go to the widgets through the session (the address cannot be set for a
    parameter the current page's widget is bound to); the widgets then write them to the address.
    """
    if not session.value(PENDING_KEY).pop(False):
        return
    steps = lesson()
    step = steps[min(session.value(STEP_KEY).get(0), len(steps) - 1)]
    for key, value in step_state(step).items():
        session.value(key).set(value)
        remember(key, value)  # the value the next page starts from (see ui.navigation.carry_over)
    state = step_state(step)
    shell = {key: value for key, value in step_query(step).items() if key not in state}
    st.switch_page(step.page, query_params=shell)


def tour_panel(url_path: str) -> None:
    """When the tour is on: the step's title and text above the page, its controls outlined,
    Back / Next / Leave. ``url_path`` is the running page's (``"attention"`` for pages/attention.py)."""
    if not session.value(ACTIVE_KEY).get():
        return
    steps = lesson()
    index = min(session.value(STEP_KEY).get(0), len(steps) - 1)
    step = steps[index]
    with st.container(border=True, key="tour_panel"):
        st.markdown(f"**{t('tour.heading', n=index + 1, total=len(steps))} · {t(step.title_key)}**")
        if url_path != Path(step.page).stem:
            st.page_link(step.page, label=t("tour.go_to_step", n=index + 1), query_params=step_query(step))
        else:
            st.markdown(t(step.body_key))
            outline(step, scroll=lambda: first_arrival(index))
        back, forward, leave = st.columns(3)
        back.button(
            t("tour.back"),
            key="tour_back",
            disabled=index == 0,
            on_click=go_to_step,
            args=(index - 1,),
            width="stretch",
        )
        if index + 1 < len(steps):
            forward.button(
                t("tour.next"), key="tour_next", type="primary", on_click=go_to_step, args=(index + 1,), width="stretch"
            )
        else:
            forward.button(t("tour.finish"), key="tour_finish", type="primary", on_click=finish_tour, width="stretch")
        leave.button(t("tour.leave"), key="tour_leave", on_click=leave_tour, width="stretch")
