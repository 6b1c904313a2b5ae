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
from streamlit.runtime.pages_manager import PagesManager

PAGE_KEY = "_shell_page"
CHANGED_KEY = "_shell_page_changed"
SHARED_PREFIX = "_shared_"


def ensure_shell() -> None:
    """Make the entry script (navigation, sidebar) run first, even for a fresh server's first visitor.

    Until some run has called ``st.navigation``, a server whose entry script has a ``pages/``
    folder beside it runs a deep link (``/attention?text=...``) as that page alone, without the
    sidebar. Turn that mode off and rerun: the same URL then goes through ``streamlit_app.py``.
    """
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def note_page(url_path: str) -> None:
    """Called by the entry script on every run: records whether the page changed since the last run."""
    previous = st.session_state.get(PAGE_KEY)
    st.session_state[CHANGED_KEY] = previous is not None and previous != url_path
    st.session_state[PAGE_KEY] = url_path


def page_changed() -> bool:
    """True on the first run of a page reached from another page of this session."""
    return bool(st.session_state.get(CHANGED_KEY))


def carry_over(key: str, default: Any, serialize: Callable[[Any], str] = str, valid: bool = True) -> None:
    """Call before drawing the URL-bound widget ``key``: after a page switch, give it the value it
    had on the previous page and write that value back to the URL (``serialize`` must match how
    Streamlit writes this widget's parameter). ``valid`` False skips a value that no longer fits."""
    if not page_changed() or (SHARED_PREFIX + key) not in st.session_state or not valid:
        return
    value = st.session_state[SHARED_PREFIX + key]
    if value != default:
        try:
            st.query_params[key] = serialize(value)
        except StreamlitAPIException:
            pass  # the previous page's binding is still live: the widget keeps the URL up to date itself
    st.session_state[key] = value


def remember(key: str, value: Any) -> None:
    """Call after drawing the widget ``key``: its value is what the next page starts from."""
    st.session_state[SHARED_PREFIX + key] = value


def shared_value(key: str, default: Any = None) -> Any:
    """The last value of the shared widget ``key`` drawn on any page (``default`` if none yet)."""
    return st.session_state.get(SHARED_PREFIX + key, default)
