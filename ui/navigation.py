"""What the shell keeps across pages: which page runs, and the values every page shares.

Streamlit ties a URL-bound widget to the page that draws it: switching pages drops its query
parameter and, when its value came from the URL, the value too. The sentence box is drawn by
several pages, so its value is remembered here and handed to the next page (and put back in
the URL, so the address bar can be shared from any page).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from . import session
from . import streamlit_internals as internals

PAGE_KEY = "_shell_page"
PENDING_KEY = "_shell_carry"  # {"page": url_path, "done": {keys drawn on that page since arriving}}
SHARED_PREFIX = "_shared_"
SHELL_RUN_KEY = "_shell_run"  # the mark of the last run that went through the entry script
SHELL_RETRY_KEY = "_shell_retry"
PAGE, PENDING = session.value(PAGE_KEY), session.value(PENDING_KEY)
SHELL_RUN, SHELL_RETRY = session.value(SHELL_RUN_KEY), session.value(SHELL_RETRY_KEY)


def shared(key: str) -> session.Value:
    """The value the shared widget ``key`` had when last drawn on any page."""
    return session.value(SHARED_PREFIX + key)


def ensure_shell(entry: bool = False) -> None:
    """Make the entry script (navigation, sidebar) run first, even for a fresh server's first visitors.

    Until some run has called ``st.navigation``, a server whose entry script has a ``pages/``
    folder beside it runs a deep link (``/attention?text=...``) as that page alone, without the
    sidebar. The first such run turns that mode off and reruns: the same URL then goes through
    ``streamlit_app.py``. Sessions whose runs had already started in that mode (a class opening
    the link in the same second) find that this run did not pass through the entry script
    (``entry=True`` marks the runs that do) and rerun once too.
    """
    if internals.leave_pages_directory_mode():
        st.rerun()
    mark = internals.run_mark()
    if entry:
        if mark is not None:
            SHELL_RUN.set(mark)
        SHELL_RETRY.pop()
        return
    if mark is None or internals.is_fragment_run() or SHELL_RUN.get() is mark:
        return  # a fragment's rerun, or a run that went through the entry script
    if not SHELL_RETRY.get():  # at most once: a page run alone (no shell) must not loop
        SHELL_RETRY.set(True)
        st.rerun()


def note_page(url_path: str) -> None:
    """Called by the entry script on every run: on arriving at another page, every shared widget
    of that page owes a carry-over until it has been drawn there (see ``carry_over``)."""
    previous = PAGE.get()
    if previous is not None and previous != url_path:
        PENDING.set({"page": url_path, "done": set()})
    PAGE.set(url_path)


def page_changed(key: str) -> bool:
    """True until the shared widget ``key`` has been drawn on the page this session arrived at.

    Not "the first run after a switch": a rerun (the user typing, a click, another tab's
    message) may interrupt that run before the widget is drawn, and the carry-over must then
    happen in the next run, not be lost with the interrupted one."""
    pending = PENDING.get()
    return bool(pending) and pending["page"] == PAGE.get() and key not in pending["done"]


def carry_over(key: str, default: Any, serialize: Callable[[Any], str] = str, valid: bool = True) -> None:
    """Call before drawing the URL-bound widget ``key``: after a page switch, give it the value it
    had on the previous page and write that value back to the URL (``serialize`` must match how
    Streamlit writes this widget's parameter). ``valid`` False skips a value that no longer fits.

    The shared value is always the user's latest: ``remember_widget`` stores it in the widget's
    ``on_change`` callback, which Streamlit runs before any script code of the next run."""
    if not page_changed(key) or not shared(key).is_set or not valid:
        return
    value = shared(key).get()
    if value != default:
        try:
            st.query_params[key] = serialize(value)
        except StreamlitAPIException:
            pass  # the previous page's binding is still live: the widget keeps the URL up to date itself
    session.value(key).set(value)


def remember(key: str, value: Any) -> None:
    """Call after drawing the widget ``key``: its value is what the next page starts from, and
    this page's carry-over of ``key`` is done."""
    shared(key).set(value)
    settle(key)


def settle(key: str) -> None:
    """This page no longer owes ``key`` a carry-over (drawn, or not needed on this page)."""
    pending = PENDING.get()
    if pending and pending["page"] == PAGE.get():
        pending["done"].add(key)


def remember_widget(key: str) -> None:
    """``on_change`` callback of a shared widget: the value the user just gave becomes the shared one
    at once, before the rerun's script (and any page switch queued with it) runs."""
    if session.value(key).is_set:
        shared(key).set(session.value(key).get())


class SharedWidgetChange:
    """The ``on_change`` callback of one drawing of the shared widget ``key`` (one per page).

    ``st.session_state[key]`` is the value of the widget that holds ``key`` *now*. During a page
    switch that is already the new page's widget while the old page's box is still on screen: text
    typed into the old box in that moment arrives as a change of the old page's widget, and reading
    ``st.session_state[key]`` would give the new page's (older) value and lose it. So the callback
    reads the value of the very widget that changed (its element id, noted by ``drawn`` once the
    widget is drawn) and, when that widget is no longer the one holding ``key``, hands the value on to
    the widget that does."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.widget_id: str | None = None

    def drawn(self) -> None:
        """Call right after drawing the widget: note its element id."""
        self.widget_id = internals.widget_id(self.key)

    def __call__(self) -> None:
        if self.widget_id is None or self.widget_id == internals.widget_id(self.key):
            remember_widget(self.key)
            return
        try:  # the changed widget belongs to the page being left
            value = internals.widget_value(self.widget_id)
        except (AttributeError, KeyError):
            remember_widget(self.key)
            return
        shared(self.key).set(value)
        session.value(self.key).set(value)  # the widget now holding the key starts from it


def shared_value(key: str, default: Any = None) -> Any:
    """The last value of the shared widget ``key`` drawn on any page (``default`` if none yet)."""
    return shared(key).get(default)
