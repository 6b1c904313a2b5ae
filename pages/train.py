"""Train: a small Transformer trained live on a toy task; its loss, accuracy and every head's
attention refreshed while it learns, a slider back through the snapshots, then the model opened
on the other pages."""

import numpy as np
import streamlit as st

from transformer.lab.presets import PRESETS
from transformer.lab.runner import DONE, PAUSED, QUEUED, RUNNING
from transformer.lab.trainer import LIMITS, positionals
from ui import session
from ui import train_runs as runs
from ui.charts import show
from ui.figures import train as figs
from ui.i18n import current_lang, t
from ui.navigation import ensure_shell

REFRESH_S = 1.5  # the live view reruns this often while a run trains (snapshots come every second)
QUEUED_REFRESH_S = 5.0  # ... and this often while it waits in the queue (it only says how many are ahead)
# the catalogue's keys, written out (the catalogue test finds every key in the sources)
PRESET_TEXT = {
    "reverse": ("train.preset_reverse", "train.preset_reverse_help"),
    "induction": ("train.preset_induction", "train.preset_induction_help"),
    "positions": ("train.preset_positions", "train.preset_positions_help"),
}
ATTENTION_CAPTION = {
    "copy": "train.attention_caption_copy",
    "reverse": "train.attention_caption_reverse",
    "sort": "train.attention_caption_sort",
    "induction": "train.attention_caption_induction",
}
DONE_TEXT = {
    "finished": "train.status_done_finished",
    "cpu-cap": "train.status_done_cpu_cap",
    "session-gone": "train.status_done_session_gone",
    "stopped": "train.status_done_stopped",
}


def preset_buttons(describe: bool) -> None:
    """One row of preset buttons (what each shows: in its tooltip, and under it while no training is drawn)."""
    cols = st.columns(len(PRESETS))
    for col, name in zip(cols, PRESETS):
        title, text = PRESET_TEXT[name]
        col.button(t(title), key=f"train_preset_{name}", on_click=runs.apply_preset, args=(name,),
                   use_container_width=True, type="primary", help=t(text))  # fmt: skip
        if describe:
            col.caption(t(text))


def settings_panel(expanded: bool) -> None:
    runs.widget_defaults()
    with st.expander(t("train.settings"), expanded=expanded):
        a, b, c = st.columns(3)
        a.selectbox(t("train.task"), runs.labels(runs.TASK, runs.TASK_TEXT), key=runs.TASK)
        a.slider(t("train.length"), 2, 16, key=runs.LENGTH, help=t("train.length_help"))
        a.slider(t("train.symbols"), 4, 60, key=runs.SYMBOLS, help=t("train.symbols_help"))
        b.slider(t("train.layers"), *LIMITS["layers"], key=runs.LAYERS)
        b.select_slider(t("train.heads"), (1, 2, 4), key=runs.HEADS)
        b.select_slider(t("train.width"), runs.WIDTHS, key=runs.WIDTH, help=t("train.width_help"))
        b.toggle(t("train.ffn"), key=runs.FFN, help=t("train.ffn_help"))
        offered = {p: runs.POSITIONAL_TEXT[p] for p in positionals()}
        c.selectbox(t("train.positional"), runs.labels(runs.POSITIONAL, offered), key=runs.POSITIONAL)
        c.select_slider(t("train.lr"), runs.LRS, key=runs.LR)
        c.slider(t("train.seconds"), 10, 300, step=10, key=runs.SECONDS, help=t("train.seconds_help"))
        c.number_input(t("train.seed"), 0, 10_000, key=runs.SEED)
        problem = runs.settings_problem()  # said before Start is pressed; Start refuses with the same words
        if problem is not None:
            st.warning(refusal_text(problem))


def refusal_text(refusal: tuple[str, dict]) -> str:
    code, fields = refusal
    if code == "busy":
        return t("train.refused_busy")
    if code == "too-large":
        return t("train.refused_too_large", **fields)
    if code == "held-out":
        return t("train.refused_held_out", **fields)
    if code == "settings":
        return t("train.bad_settings", **fields)
    return t("train.refused_building")


def controls(run) -> None:
    """Start, Pause / Resume, Step, Stop: callbacks, so that a click survives any rerun of the run."""
    state = run.status().state if run is not None else None
    start, pause, step, stop, _ = st.columns([1, 1, 1, 1, 2])
    start.button(t("train.start"), key="train_start", on_click=runs.start_from_widgets, use_container_width=True)
    if state in (RUNNING, QUEUED):
        pause.button(t("train.pause"), key="train_pause", on_click=runs.pause, use_container_width=True)
    else:
        pause.button(t("train.resume"), key="train_resume", on_click=runs.resume, use_container_width=True,
                     disabled=state != PAUSED)  # fmt: skip
    step.button(t("train.step"), key="train_step", on_click=runs.step, args=(10,), use_container_width=True,
                disabled=state != PAUSED, help=t("train.step_help"))  # fmt: skip
    stop.button(t("train.stop"), key="train_stop", on_click=runs.stop_run, use_container_width=True,
                disabled=state in (None, DONE))  # fmt: skip
    refusal = runs.take_refusal()
    if refusal is not None:
        st.error(refusal_text(refusal))


def status_line(status) -> None:
    numbers = dict(steps=f"{status.steps:,}", seconds=f"{status.seconds:.0f}", budget=f"{status.budget:.0f}",
                   cpu=f"{status.cpu_seconds:.0f}")  # fmt: skip
    if status.state == RUNNING and status.steps == 0:
        st.info(t("train.building"))
        return
    if status.state == QUEUED:
        running, waiting = runs.pool().counts()
        st.warning(t("train.status_queued", ahead=status.ahead, running=running))
    elif status.state == RUNNING:
        st.info(t("train.status_running", **numbers))
    elif status.state == PAUSED:
        st.info(t("train.status_paused", **numbers))
    elif status.reason == "failed":
        st.error(t("train.status_failed", error=status.error or ""))
    else:
        st.success(t(DONE_TEXT[status.reason], **numbers))


def chosen_snapshot_index(snaps: list) -> int:
    """The snapshot the slider holds (the newest while the follow toggle is on), before they are drawn."""
    last = len(snaps) - 1
    slider = session.value(runs.SNAPSHOT)
    if session.value(runs.FOLLOW).get(True) or not slider.is_set or slider.get() > last:
        slider.set(last)
    return int(slider.get())


def chosen_snapshot(snaps: list) -> None:
    """The follow toggle and the snapshot slider (the slider only once there are two snapshots)."""
    last = len(snaps) - 1
    follow = st.toggle(t("train.follow"), key=runs.FOLLOW, value=True)
    if last > 0:
        st.slider(t("train.snapshot"), 0, last, key=runs.SNAPSHOT, disabled=follow, help=t("train.snapshot_help"),
                  format="%d")  # fmt: skip


def live_view(run, lang: str) -> None:
    """Everything that changes as the run trains; reruns on its own every REFRESH_S while it does."""
    status = run.status()
    if runs.redraw_needed(status.state):  # the buttons outside this view, and this view's refresh interval
        st.rerun()
    status_line(status)
    snaps = run.snapshots()
    if not snaps:
        st.caption(t("train.building"))
        return
    watch = runs.watch_text(run.settings)
    if watch:
        st.caption(watch)
    index = chosen_snapshot_index(snaps)
    snap = snaps[index]
    steps = [s.step for s in snaps]
    show(figs.training_curves(steps, [s.loss for s in snaps], [s.accuracy for s in snaps], [s.exact for s in snaps],
                              lang, marked=snap.step), filename="train-curves", key="train_curves")  # fmt: skip
    st.markdown(t("train.now", step=f"{snap.step:,}", accuracy=f"{snap.accuracy:.3f}", exact=f"{snap.exact:.3f}",
                  induction=f"{float(snap.induction.max()):.2f}"))  # fmt: skip
    chosen_snapshot(snaps)  # under the curves: the figure comes first on the screen
    show(figs.attention_grid(snap.attention, run.example_tokens, lang, step=snap.step), filename="train-attention",
         key="train_attention")  # fmt: skip
    st.caption(t(ATTENTION_CAPTION[run.settings.task]))
    show(figs.head_score_curves(steps, np.stack([s.induction for s in snaps]), np.stack([s.previous for s in snaps]),
                                lang, marked=snap.step), filename="train-head-scores", key="train_scores")  # fmt: skip
    st.caption(t("train.scores_caption"))


def open_elsewhere(run) -> None:
    st.subheader(t("train.open_title"))
    st.button(t("train.open"), key="train_open", on_click=runs.open_on_other_pages, disabled=not run.snapshots(),
              help=t("train.open_help"))  # fmt: skip
    key = runs.opened_key()
    if key:
        st.success(t("train.opened", name=key))
        a, b = st.columns(2)
        a.page_link("pages/generate.py", label=t("train.link_generate"), icon=":material/auto_awesome:")
        b.page_link("pages/head_atlas.py", label=t("train.link_atlas"), icon=":material/apps:")


ensure_shell()
lang = current_lang()
st.title(t("train.title"), help=t("train.intro"))  # the help, not a line: the curves fit the first screen
run = runs.current_run()
preset_buttons(describe=run is None)
controls(run)
if run is None:
    st.info(t("train.nothing_yet"))
    settings_panel(expanded=True)
    st.stop()
every = {RUNNING: REFRESH_S, QUEUED: QUEUED_REFRESH_S}.get(run.status().state)
st.fragment(run_every=every)(live_view)(run, lang)
settings_panel(expanded=False)  # below the live view: the curves come first on the screen
open_elsewhere(run)
