"""A Class screen whose poll stopped is run again.

Both Class screens are drawn by a fragment that Streamlit's page reruns every few seconds
(``ui.classroom.view``). In the 30-student browser test, after a replica was killed and restarted, a few of
its students' screens answered clicks but never polled again (once one screen in four runs, once two in one
run): every later change (the reveal, the next question) never reached them. Streamlit keeps the page's timer
for a fragment in the browser and starts it again only from a full page run; what stopped it there is not
known. This watch does not depend on the cause:

* every poll writes a new value into one attribute (:data:`POLLED_ATTR`) of an element it draws anyway
  (:func:`polled`), so a screen whose poll runs changes that value at every poll;
* a small script outside the fragment (:func:`watch_poll`, a components-v2 component: no iframe, no
  request of its own) looks at that value every ``CHECK_S`` seconds and, when it has not changed for
  :func:`stale_after` seconds, asks for a full page run, which registers the fragment and its timer again.
  While the page is disconnected the request goes nowhere, and is made again as long later.

Cost: one timer per screen that reads one attribute every 2 s; a full page run only for a stopped poll
(five polls, so a slow server does not set it off).
"""

from __future__ import annotations

import logging
import time

import streamlit as st

POLLED_ATTR = "data-polled"
CHECK_S = 2.0


def stale_after(every_s: float) -> float:
    """Seconds without a poll after which the watch runs the page again, for a screen polled every ``every_s``:
    five polls (a slow server does not set it off), at least 8 s."""
    return max(8.0, 5 * every_s)


_LOG = logging.getLogger(__name__)

_JS = """
export default function ({ data, parentElement, setTriggerValue }) {
  const watch = parentElement.__classPollWatch || (parentElement.__classPollWatch = {});
  clearTimeout(watch.timer);
  let seen = null;
  let since = Date.now();
  const check = () => {
    const marker = document.querySelector(`[${data.attr}]`);
    const value = marker === null ? null : marker.getAttribute(data.attr);
    if (value === null || value !== seen) {
      seen = value;
      since = Date.now();
    } else if (Date.now() - since > data.stale_ms) {
      since = Date.now();
      setTriggerValue("stale", value);
    }
    watch.timer = setTimeout(check, data.check_ms);
  };
  watch.timer = setTimeout(check, data.check_ms);
  return () => clearTimeout(watch.timer);
}
"""
_WATCH = st.components.v2.component("class_poll_watch", html="<span></span>", js=_JS)


def polled() -> str:
    """The attribute a screen's poll writes into an element it draws (a new value at every run)."""
    return f'{POLLED_ATTR}="{time.monotonic():.3f}"'


def _rerun_said() -> None:
    _LOG.info("a Class screen's poll had stopped: its page is run again")


def watch_poll(key: str, every_s: float) -> None:
    """Mount the watch for a screen polled every ``every_s`` (outside the polling fragment: its request is a full
    page run)."""
    _WATCH(key=key, data={"attr": POLLED_ATTR, "stale_ms": int(stale_after(every_s) * 1000),
                          "check_ms": int(CHECK_S * 1000)}, on_stale_change=_rerun_said, height=0)  # fmt: skip
