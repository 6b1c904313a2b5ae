"""Stepping through a sequence of steps (decoding, a lesson's stages): Previous / Next / Play buttons
beside a slider, and a slider that never breaks when there is only one value to choose.

Streamlit raises ``StreamlitInvalidMinMaxError`` for a slider whose ``min_value`` equals its
``max_value`` (a one-token translation, a one-token limit): :func:`bounded_slider` shows a caption
with the only value instead, and every page uses it where the bounds come from data.
"""

from __future__ import annotations

import time

import streamlit as st

from . import session
from .i18n import t

PLAY_SECONDS = 1.5  # how long Play shows each step: time to read the figure before the next one


def bounded_slider(where, label: str, low: int, high: int, value: int, *, key: str, **kwargs) -> int:
    """``where.slider(label, low, high, value, key=key, **kwargs)``, or ``low`` (with a caption saying
    so) when ``high <= low``; a remembered value outside ``[low, high]`` is dropped first."""
    kept = session.value(key).get()
    if kept is not None and not (isinstance(kept, int) and low <= kept <= high):
        session.value(key).pop()
    if high <= low:
        where.caption(t("steps.only_value", label=label, value=low))
        return low
    return int(where.slider(label, low, high, min(max(value, low), high), key=key, **kwargs))


def _playing_key(key: str) -> str:
    return f"_{key}_playing"


def _pending_key(key: str) -> str:
    return f"_{key}_pending"


def _move(key: str, to: int, count: int) -> None:
    session.value(key).set(max(1, min(to, count)))


def _play(key: str, count: int) -> None:
    playing = _playing_key(key)
    session.value(playing).set(not session.value(playing).get(False))
    if session.value(playing).get() and session.value(key).get(count) >= count:
        session.value(key).set(1)  # Play at the last step starts again from the first


def step_navigator(label: str, count: int, value: int, *, key: str, slider_share: int = 5) -> int:
    """Previous / Next / Play and a slider over steps ``1..count``; returns the step (1-based).
    ``slider_share``: the slider's width against one button's (less in a narrow column, so that the
    buttons keep their words).

    With one step there is nothing to move: a caption names it and no slider is drawn.
    Call :func:`advance_if_playing` after drawing the step's figures.
    """
    if count <= 1:
        session.value(key).pop()
        session.value(_playing_key(key)).pop()
        st.caption(t("steps.only_step"))
        return 1
    pending = session.value(_pending_key(key)).pop()  # Play's next step, set after the slider was drawn
    if pending is not None:
        session.value(key).set(pending)
    if not 1 <= int(session.value(key).get(value)) <= count:
        session.value(key).pop()
    current = int(session.value(key).get(min(max(value, 1), count)))
    playing = session.value(_playing_key(key)).get(False)
    back, forward, play, slider = st.columns([1, 1, 1, slider_share], vertical_alignment="bottom")
    back.button(t("steps.previous"), key=f"{key}_previous", disabled=current <= 1, on_click=_move,
                args=(key, current - 1, count), width="stretch")  # fmt: skip
    forward.button(t("steps.next"), key=f"{key}_next", disabled=current >= count, on_click=_move,
                   args=(key, current + 1, count), type="primary", width="stretch")  # fmt: skip
    play.button(t("steps.stop") if playing else t("steps.play"), key=f"{key}_play", on_click=_play,
                args=(key, count), width="stretch", help=t("steps.play_help", seconds=PLAY_SECONDS))  # fmt: skip
    return int(slider.slider(label, 1, count, current, key=key))


def advance_if_playing(key: str, count: int) -> None:
    """While Play is on: wait, show the next step (a rerun), and stop after the last one."""
    playing = _playing_key(key)
    if not session.value(playing).get():
        return
    step = int(session.value(key).get(1))
    if step >= count:
        session.value(playing).set(False)
        return
    time.sleep(PLAY_SECONDS)
    session.value(_pending_key(key)).set(step + 1)  # the slider's own key cannot change after it is drawn
    st.rerun()
