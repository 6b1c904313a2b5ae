"""The one owner of a browser session's state: in ``ui/``, only this module touches ``st.session_state``.

Named operations for what crosses pages and layers:

- the sidebar's selection for this run (model key, device, maximum length): :func:`selection`;
- the model chosen in the sidebar (its widget ``"model"``): :func:`chosen_model`, :func:`select_model`;
- this session's uploads, text and vision models in ONE registry by display name ``upload: <file>``:
  :func:`uploads`, :func:`uploads_of`, :func:`add_upload`, :func:`forget_upload`, :func:`upload_key`;
- the memo of analyses run with those uploads: :func:`upload_memo`, :func:`forget_results`;
- the upload the Checkpoints page is recognising: :func:`pending_upload`;
- the current text (the sentence box the text pages share): :func:`current_text`, :func:`set_current_text`;
- the interface language: :func:`language`, :func:`set_language`.

Whatever else a ui module keeps — the value of a widget it draws for a page, its own bookkeeping — is a
:class:`Value`: one named entry with get/set/pop. A page's own bookkeeping that is not a widget (a seed,
a click count, what the page last followed) is a named :class:`Value` at the end of this module. Pages
touch ``st.session_state`` only for the widget keys they draw (``tests/test_session_owner.py`` lists each).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")

UPLOAD_PREFIX = "upload: "
SELECTION_KEY = "selection"
MODEL_WIDGET = "model"  # the sidebar's model selectbox
UPLOADS_KEY = "uploaded_models"
MEMO_KEY = "upload_analysis_memo"
PENDING_UPLOAD_KEY = "ckpt_pending"  # {"file_id", "name", "result", "error"} of the file being recognised
TEXT_WIDGET = "text"  # the sentence box of the text pages
LANGUAGE_KEY = "_lang"


@dataclass(frozen=True)
class Value:
    """One entry of this session's state under ``key``: a widget's value (set before the widget is
    drawn, read in its callback) or a module's own bookkeeping."""

    key: str

    def get(self, default: Any = None) -> Any:
        return st.session_state.get(self.key, default)

    def set(self, value: Any) -> None:
        st.session_state[self.key] = value

    def pop(self, default: Any = None) -> Any:
        return st.session_state.pop(self.key, default)

    def setdefault(self, default: T) -> T:
        return st.session_state.setdefault(self.key, default)

    def count_up(self) -> int:
        """Add one to the count kept here (0 when none yet) and give the new count."""
        st.session_state[self.key] = st.session_state.get(self.key, 0) + 1
        return st.session_state[self.key]

    @property
    def is_set(self) -> bool:
        return self.key in st.session_state


def value(key: str) -> Value:
    """The entry ``key`` of this session's state."""
    return Value(key)


# ---- the sidebar's selection and model choice -------------------------------------------------------------------
def selection() -> Any:
    """The sidebar's ``Selection`` for this run (None before the sidebar has run, or with no model)."""
    return st.session_state.get(SELECTION_KEY)


def set_selection(chosen: Any) -> None:
    """The entry script's sidebar result for this run."""
    st.session_state[SELECTION_KEY] = chosen


def chosen_model(default: str | None = None) -> str | None:
    """The model key the sidebar's selectbox holds (``default`` when none yet)."""
    return st.session_state.get(MODEL_WIDGET, default)


def select_model(key: str) -> None:
    """Make ``key`` the sidebar's model (from a callback, or before the sidebar is drawn)."""
    st.session_state[MODEL_WIDGET] = key


def forget_model_choice() -> None:
    """The sidebar starts again from its first model."""
    st.session_state.pop(MODEL_WIDGET, None)


def keep_unshown(*keys: str) -> None:
    """Streamlit drops a widget's value in a run that does not draw it; given back to the session as a
    value of its own, it waits for the next page that draws the widget (the model and length a
    student chose survive a visit to a page without them)."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


# ---- uploads: one registry ----------------------------------------------------------------------------------------
def upload_key(name: str) -> str:
    """The display name of the upload of file ``name`` (``upload: <name>``)."""
    return UPLOAD_PREFIX + name


def is_upload(key: str) -> bool:
    return key.startswith(UPLOAD_PREFIX)


def uploads() -> dict[str, Any]:
    """This session's uploaded models (text and vision) by display name; never shared."""
    return st.session_state.setdefault(UPLOADS_KEY, {})


def uploads_of(kind: type | tuple[type, ...]) -> dict[str, Any]:
    """The uploads that are instances of ``kind`` (e.g. LoadedModel, VisionModel), by display name."""
    return {key: model for key, model in uploads().items() if isinstance(model, kind)}


def store_upload(key: str, model: Any) -> None:
    """Keep ``model`` under ``key`` (the same model moved to another device, say)."""
    uploads()[key] = model


def add_upload(key: str, model: Any) -> None:
    """Keep a new ``model`` under ``key``; analyses of a model it replaces are forgotten."""
    forget_results(key)
    store_upload(key, model)


def forget_upload(key: str) -> None:
    """Drop the upload ``key``, its analyses, and the sidebar's choice of it."""
    uploads().pop(key, None)
    forget_results(key)
    if chosen_model() == key:
        forget_model_choice()


def upload_memo(make: Callable[[], T], is_memo: Callable[[Any], bool]) -> T:
    """This session's memo of analyses with its uploads: the one kept (when ``is_memo`` says it is one),
    else a new one from ``make()``."""
    memo = st.session_state.get(MEMO_KEY)
    if not is_memo(memo):
        memo = st.session_state[MEMO_KEY] = make()
    return memo


def forget_results(key: str) -> None:
    """Drop this session's memoised analyses of the upload ``key`` (its model was replaced or removed)."""
    memo = st.session_state.get(MEMO_KEY, {})
    for memo_key in [k for k in memo if k[0] == key]:
        del memo[memo_key]


def pending_upload() -> dict | None:
    """The file the Checkpoints page is recognising ({"file_id", "name", "result", "error"}), or None."""
    return st.session_state.get(PENDING_UPLOAD_KEY)


def set_pending_upload(pending: dict) -> None:
    st.session_state[PENDING_UPLOAD_KEY] = pending


def forget_pending_upload() -> None:
    """Drop the file being recognised (its tensors are freed)."""
    st.session_state.pop(PENDING_UPLOAD_KEY, None)


# ---- the current text and the language ---------------------------------------------------------------------------
def current_text(default: str | None = None) -> str | None:
    """What the sentence box of the text pages holds (``default`` when it has not been drawn yet)."""
    return st.session_state.get(TEXT_WIDGET, default)


def set_current_text(text: str) -> None:
    """Put ``text`` in the sentence box (from a callback, or before the box is drawn)."""
    st.session_state[TEXT_WIDGET] = text


def language() -> str | None:
    """The interface language this session settled on (None before the first run settled it)."""
    return st.session_state.get(LANGUAGE_KEY)


def set_language(lang: str) -> None:
    st.session_state[LANGUAGE_KEY] = lang


# ---- bookkeeping that a ui module keeps for itself ---------------------------------------------------------------
def forget(keys: Iterable[str]) -> None:
    """Drop the entries ``keys`` (those that are set)."""
    for key in keys:
        st.session_state.pop(key, None)


# ---- what a page keeps for itself that is not a widget ------------------------------------------------------------
FORCED_TOKENS = Value("gen_forced")  # Generate: {"prompt", "tokens": {step: token id}} forced at each step
PROMPT_FROM_ADDRESS = Value("_gen_prompt_link")  # Generate: the prompt an address (a link, a lesson step) last gave
ATLAS_CLICK = Value("_atlas_click")  # Head atlas: the last grid click, applied once
POSITIONAL_MODEL = Value("pe_model")  # Positional encoding: the model the page's widgets were set for
TRANSLATE_SIDEBAR = Value("_tr_sidebar")  # Translate: the sidebar's model the page last followed
TRANSLATE_TASK = Value("_tr_task")  # Translate: the task whose example the text box was set for
RANDOM_PICTURE_SEED = Value("vseed")  # Vision: the seed of the random test picture
PATCH_CLICKS = Value("_vpatch_clicks")  # Vision: patch clicks so far (a new chart key per click)
CLASS_TEACHER = Value("_class_teacher")  # Class: {"code", "secret", "screen"} this browser teaches (never in a URL)
CLASS_PENDING = Value("_class_pending")  # Class: {"code", "number", "choice"} an answer the store has not taken yet


def mask_clicks(sentence: int, length: int) -> Value:
    """Masks: clicks so far on the chart of ``sentence`` at ``length`` (a new chart key per click)."""
    return Value(f"_mask_clicks_{sentence}_{length}")
