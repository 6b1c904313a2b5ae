"""Every use of Streamlit's non-public objects in the app, in one place.

The public API cannot (as of Streamlit 1.67) say: whether this run went through the entry script or is
a page run on its own; which element id a widget key was drawn under, or what a given (older) widget
holds; whether a browser session is still connected; or drop a closed session's uploaded files. Each
function below names what it relies on; ``tests/test_streamlit_internals.py`` checks that all of it is
still there, so that a Streamlit upgrade fails that test loudly instead of quietly changing behaviour.
"""

from __future__ import annotations

from typing import Any

# What each function relies on, checked by tests/test_streamlit_internals.py: (module, object, attributes)
RELIED_ON = (
    ("streamlit.runtime.pages_manager", "PagesManager", ("uses_pages_directory",)),
    ("streamlit.runtime.scriptrunner", "get_script_run_ctx", ()),
    (
        "streamlit.runtime.scriptrunner_utils.script_run_context",
        "ScriptRunContext",
        ("cursors", "fragment_ids_this_run"),
    ),
    ("streamlit.runtime.state.session_state", "SessionState", ("get_widget_id_from_key", "get_widget_value")),
    ("streamlit.runtime.state", "get_session_state", ()),
    ("streamlit.runtime", "Runtime", ("exists", "instance", "is_active_session", "uploaded_file_mgr")),
)


def leave_pages_directory_mode() -> bool:
    """Turn off the mode in which a deep link runs its page alone (no ``st.navigation`` yet on this
    server); True when it was on (the caller then reruns)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        return True
    return False


def run_context() -> Any:
    """This script run's context, or None outside a Streamlit run (a notebook, a plain test)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return get_script_run_ctx(suppress_warning=True)


def run_mark() -> object | None:
    """An object that is new for every script run and the same throughout one (the run's cursors)."""
    ctx = run_context()
    return ctx.cursors if ctx is not None else None


def is_fragment_run() -> bool:
    """True when this run reruns only a fragment."""
    ctx = run_context()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def session_id() -> str | None:
    """The running browser session's id (None outside a run)."""
    ctx = run_context()
    return ctx.session_id if ctx is not None else None


def _session_state() -> Any:
    """This browser session's ``SessionState`` (``st.session_state`` wraps it; only the object itself
    answers which element id a key was drawn under and what a given widget holds)."""
    from streamlit.runtime.state import get_session_state

    return object.__getattribute__(get_session_state(), "_state")


def widget_id(key: str) -> str | None:
    """The element id the widget with ``key`` was last drawn under (None outside a Streamlit run)."""
    try:
        return _session_state().get_widget_id_from_key(key)
    except (AttributeError, RuntimeError):
        return None


def widget_value(element_id: str) -> Any:
    """What the widget with ``element_id`` holds; KeyError when it holds nothing."""
    return _session_state().get_widget_value(element_id)


def runtime_exists() -> bool:
    """True when a Streamlit server runs in this process (False under AppTest and in plain scripts)."""
    from streamlit.runtime import Runtime

    return Runtime.exists()


def runtime_session_active(session: str) -> bool:
    """True while the browser of ``session`` is connected (True when no runtime runs: AppTest)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return True
    return Runtime.instance().is_active_session(session)


def remove_session_files(session: str) -> None:
    """The session's uploaded files (the uploaders' bytes) removed from the runtime's file store."""
    from streamlit.runtime import Runtime

    if Runtime.exists():
        Runtime.instance().uploaded_file_mgr.remove_session_files(session)
