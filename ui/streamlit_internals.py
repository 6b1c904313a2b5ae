"""Every use of Streamlit's non-public objects in the app, in one place.

The public API cannot (as of Streamlit 1.67) say: whether this run went through the entry script or is
a page run on its own; which element id a widget key was drawn under, or what a given (older) widget
holds; whether a browser session is still connected; drop a closed session's uploaded files; or start a session's
run from the server (a fragment's, as the browser's own timer asks for it). Each
function below names what it relies on; ``tests/test_streamlit_internals.py`` checks that all of it is
still there, so that a Streamlit upgrade fails that test loudly instead of quietly changing behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What each function relies on, checked by tests/test_streamlit_internals.py: (module, object, attributes)
RELIED_ON = (
    ("streamlit.runtime.pages_manager", "PagesManager", ("uses_pages_directory",)),
    ("streamlit.runtime.scriptrunner", "get_script_run_ctx", ()),
    (
        "streamlit.runtime.scriptrunner_utils.script_run_context",
        "ScriptRunContext",
        ("cursors", "fragment_ids_this_run", "session_id", "query_string", "context_info"),
    ),
    ("streamlit.runtime.scriptrunner_utils.script_run_context", "ThreadState", ("get",)),
    ("streamlit.runtime.scriptrunner_utils.script_requests", "RerunData", ()),
    ("streamlit.runtime.scriptrunner.script_runner", "ScriptRunner", ("request_rerun",)),
    ("streamlit.runtime.app_session", "AppSession", ("page_script_hash", "has_fragment", "_create_scriptrunner")),
    ("streamlit.runtime.websocket_session_manager", "WebsocketSessionManager", ("get_active_session_info",)),
    ("streamlit.runtime.state.session_state", "SessionState", ("get_widget_id_from_key", "get_widget_value")),
    ("streamlit.runtime.state", "get_session_state", ()),
    (
        "streamlit.runtime",
        "Runtime",
        ("exists", "instance", "is_active_session", "uploaded_file_mgr", "_get_async_objs"),
    ),
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


@dataclass(frozen=True)
class FragmentRun:
    """A fragment of a browser session, as another thread can ask Streamlit to run it (:func:`rerun_fragment`):
    the session, the fragment, and the page and address its runs have (what the browser's timer sends)."""

    session: str
    fragment: str
    page: str
    query: str
    context: Any = None  # the browser's context (time zone, locale, ...) as the run had it, or None


def this_fragment() -> FragmentRun | None:
    """The fragment whose function is running now (None outside one, or with no server running: AppTest)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    ctx = run_context()
    if ctx is None or not runtime_exists():
        return None
    try:
        fragment = ThreadState.get().fragment_id
    except RuntimeError:
        return None
    if not fragment:
        return None
    return FragmentRun(ctx.session_id, fragment, ctx.page_script_hash, ctx.query_string, ctx.context_info)


def rerun_fragment(run: FragmentRun) -> bool:
    """Ask Streamlit to run ``run``'s fragment now, from any thread: the request the browser's timer makes for a
    fragment with ``run_every``, but with no widget states (``widget_states=None``: the session keeps its own, and
    a click waiting to be run keeps its value when the two requests are merged). False when the session has
    closed, is on another page, or no longer holds the fragment (a full run dropped it); the request itself is
    made on the server's event loop, as every request of a browser is."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    if not Runtime.exists():
        return False
    runtime = Runtime.instance()
    info = runtime._session_mgr.get_active_session_info(run.session)
    if info is None:
        return False
    app = info.session
    if not _still_there(app, run):
        return False
    data = RerunData(query_string=run.query, page_script_hash=run.page, fragment_id=run.fragment, is_auto_rerun=True,
                     context_info=run.context)  # fmt: skip

    def request() -> None:  # on the event loop: what AppSession.request_rerun does with a browser's request
        if not _still_there(app, run):
            return
        runner = app._scriptrunner
        if runner is not None and runner.request_rerun(data):
            return
        app._create_scriptrunner(data)

    runtime._get_async_objs().eventloop.call_soon_threadsafe(request)
    return True


def _still_there(app: Any, run: FragmentRun) -> bool:
    return app.page_script_hash == run.page and app.has_fragment(run.fragment)
