"""The Train page's trainings: one server-wide pool (``transformer.lab.runner``) and this session's one run.

The pool is made once per server process and only counts runs; each session keeps its own run in
its own state (``ui.session``), so no session can see or touch another's. A run belongs to the
browser session that started it: it stops on its own once that session has been gone for the
pool's grace period (a closed tab), and the pool refuses a second run while it lives.
"""

from __future__ import annotations

import uuid

import streamlit as st

from transformer.lab.export import lab_metrics, to_loaded
from transformer.lab.presets import PRESETS, preset_of
from transformer.lab.runner import DONE, QUEUED, LabRefused, Limits, Run, RunPool
from transformer.lab.tasks import TooFewHeldOut
from transformer.lab.trainer import LabSettings

from . import session
from . import streamlit_internals as internals
from .i18n import LANGUAGES, t, translate

RUN = session.value("_train_run")  # this session's Run (the training thread holds the model)
OWNER = session.value("_train_owner")  # who this session is to the pool
REFUSAL = session.value("_train_refusal")  # (code, fields) of the last start that was refused, shown once
OPENED = session.value("_train_opened")  # the upload key the trained model was last opened as
LAST_STATE = session.value("_train_state")  # the run's state when the page last drew its buttons

# the page's widgets, by key: their values make the settings
TASK, LENGTH, SYMBOLS = "train_task", "train_length", "train_symbols"
LAYERS, HEADS, WIDTH, POSITIONAL, FFN = "train_layers", "train_heads", "train_width", "train_positional", "train_ffn"
SECONDS, SEED, LR = "train_seconds", "train_seed", "train_lr"
SNAPSHOT, FOLLOW = "train_snapshot", "train_follow"
WIDTHS = (16, 32, 64, 128)
# choice widgets' shown names: name -> catalogue key
TASK_TEXT = {
    "copy": "train.task_copy",
    "reverse": "train.task_reverse",
    "sort": "train.task_sort",
    "induction": "train.task_induction",
}
POSITIONAL_TEXT = {
    "learned": "train.positional_learned",
    "sinusoidal": "train.positional_sinusoidal",
    "none": "train.positional_none",
    "rotary": "train.positional_rotary",
}
LRS = (7e-5, 1e-4, 3e-4, 1e-3, 2e-3, 3e-3, 1e-2)
# what to watch for in a preset's training, and about when (catalogue keys, written out for the catalogue test)
WATCH_TEXT = {
    "reverse": "train.watch_reverse",
    "induction": "train.watch_induction",
    "positions": "train.watch_positions",
}


@st.cache_resource(show_spinner=False)
def pool() -> RunPool:
    """The server's one pool of trainings (``ATTENTION_LAB_TRAININGS`` at once)."""
    return RunPool(Limits.from_env())


def current_run() -> Run | None:
    return RUN.get()


def owner() -> str:
    """This browser session's name to the pool (its Streamlit session id, else one made for it)."""
    if not OWNER.is_set:
        OWNER.set(internals.session_id() or uuid.uuid4().hex)
    return OWNER.get()


def _alive_check(session_id: str):
    return lambda: internals.runtime_session_active(session_id)


def start(settings: LabSettings, seconds: float) -> Run | None:
    """A new run of ``settings`` for ``seconds`` of training; None when refused (``take_refusal`` says why)."""
    who = owner()
    try:
        run = pool().start(who, settings, seconds, _alive_check(who))
    except LabRefused as err:
        REFUSAL.set((err.code, err.fields))
        return None
    RUN.set(run)
    OPENED.pop()
    return run


def start_from_widgets() -> Run | None:
    """The Start button's callback: a run of the widgets' settings (None when refused)."""
    try:
        settings, seconds = settings_from_widgets()
    except TooFewHeldOut as err:  # checked before anything starts: the page says why in its own language
        REFUSAL.set(("held-out", err.fields))
        return None
    except ValueError as err:
        REFUSAL.set(("settings", {"error": str(err)}))
        return None
    return start(settings, seconds)


def settings_problem() -> tuple[str, dict] | None:
    """(code, fields) when the widgets hold settings a run would refuse (shown before Start is pressed);
    None when they can be trained."""
    try:
        settings_from_widgets()
    except TooFewHeldOut as err:
        return "held-out", err.fields
    except ValueError as err:
        return "settings", {"error": str(err)}
    return None


def watch_text(settings: LabSettings) -> str | None:
    """What to watch for in a preset's run and about when (None for settings of one's own)."""
    preset = preset_of(settings)
    if preset is None:
        return None
    return t(WATCH_TEXT[preset.name], at=f"{preset.watch_at:.0f}" if preset.watch_at else "")


def take_refusal() -> tuple[str, dict] | None:
    """(code, fields) of a start refused since the page was last drawn, once."""
    return REFUSAL.pop()


def pause() -> None:
    run = current_run()
    if run is not None:
        run.pause()
        run.wait_idle(5.0)  # the page then shows the snapshot the run paused at


def resume() -> None:
    run = current_run()
    if run is not None:
        run.resume()


def step(count: int) -> None:
    """``count`` steps of the paused run, waited for (a few hundred milliseconds)."""
    run = current_run()
    if run is not None:
        run.step(count)
        run.wait_idle(10.0)


def labels(key: str, texts: dict[str, str]) -> list[str]:
    """The options of the choice widget ``key`` in this session's language (``texts``: name -> catalogue
    key). The widget holds a shown label, not a name (AppTest needs options without ``format_func``):
    a name, or a label of the other language, that it holds is turned into this language's label."""
    shown = {name: t(text) for name, text in texts.items()}
    value = session.value(key)
    if value.is_set and value.get() not in shown.values():
        value.set(shown.get(name_of(value.get(), texts), next(iter(shown.values()))))
    return list(shown.values())


def name_of(label: str, texts: dict[str, str]) -> str:
    """The name behind a choice widget's ``label`` (in any language), or ``label`` itself when it is a name."""
    for name, text in texts.items():
        if label == name or any(label == translate(text, lang) for lang in LANGUAGES):
            return name
    return label


def settings_from_widgets() -> tuple[LabSettings, float]:
    """The settings the page's widgets hold (the reverse preset's where one is not drawn yet)."""
    base = PRESETS["reverse"].settings
    get = lambda key, default: session.value(key).get(default)  # noqa: E731
    settings = LabSettings(
        task=name_of(get(TASK, base.task), TASK_TEXT), length=int(get(LENGTH, base.length)), symbols=int(get(SYMBOLS, base.symbols)),
        layers=int(get(LAYERS, base.layers)), heads=int(get(HEADS, base.heads)), d_model=int(get(WIDTH, base.d_model)),
        feed_forward=bool(get(FFN, base.feed_forward)),
        positional=name_of(get(POSITIONAL, base.positional), POSITIONAL_TEXT),
        lr=float(get(LR, base.lr)), batch=base.batch, seed=int(get(SEED, base.seed)),
    )  # fmt: skip
    if settings.task == "induction":
        settings = settings.replace(batch=PRESETS["induction"].settings.batch)
    return settings, float(get(SECONDS, PRESETS["reverse"].seconds))


def widget_defaults() -> None:
    """Fill the widgets' values on the page's first visit (from the reverse preset)."""
    if not session.value(TASK).is_set:
        set_widgets(PRESETS["reverse"].settings, PRESETS["reverse"].seconds)


def set_widgets(settings: LabSettings, seconds: float) -> None:
    values = {TASK: settings.task, LENGTH: settings.length, SYMBOLS: settings.symbols, LAYERS: settings.layers,
              HEADS: settings.heads, WIDTH: settings.d_model, FFN: settings.feed_forward,
              POSITIONAL: settings.positional, LR: settings.lr, SEED: settings.seed, SECONDS: int(seconds)}  # fmt: skip
    for key, value in values.items():
        session.value(key).set(value)


def apply_preset(name: str) -> None:
    """A preset button's callback: its settings into the widgets, and the training started (unless
    this session already has one: then the refusal says so and the widgets keep their values)."""
    preset = PRESETS[name]
    if start(preset.settings, preset.seconds) is not None:
        set_widgets(preset.settings, preset.seconds)


def stop_run() -> None:
    run = current_run()
    if run is not None:
        run.stop()
        run.wait_done(15.0)  # the worker snapshots the step it stopped at and sends its weights first


def open_on_other_pages() -> str | None:
    """The run's model now, as this session's upload ``upload: lab-<task>-step<N>``, chosen in the
    sidebar (the Generate page and the head atlas offer it first); returns its key (None when refused)."""
    run = current_run()
    if run is None:
        return None
    try:
        model, task, steps = run.export()
    except LabRefused as err:
        REFUSAL.set((err.code, err.fields))
        return None
    snaps = run.snapshots()
    name = f"lab-{task.name}-step{steps}"
    key = session.upload_key(name)
    metrics = lab_metrics(run.settings, snaps[-1]) if snaps else None
    session.add_upload(key, to_loaded(model, task, name, metrics))
    session.select_model(key)
    OPENED.set(key)
    return key


def redraw_needed(state: str) -> bool:
    """True once, in the live view's own rerun, when the run has ended or has left the queue since the page
    was last drawn whole (the page then reruns whole: its buttons, and the live view's refresh interval)."""
    before = LAST_STATE.get()
    LAST_STATE.set(state)
    left_queue = before == QUEUED and state != QUEUED
    return internals.is_fragment_run() and ((state == DONE and before != DONE) or left_queue)


def opened_key() -> str | None:
    return OPENED.get()
