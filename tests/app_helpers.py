"""Helpers for the AppTest tests of the pages: opening the app on a page, reading its figures and texts."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "streamlit_app.py")
MODEL = ROOT / "assets" / "models" / "imdb-sentiment"


def open_app(
    page: str | None = None,
    *,
    state: dict | None = None,
    uploads: dict | None = None,
    chosen: str | None = None,
    by_link: bool = False,
    timeout: float = 120,
    **query: str,
) -> AppTest:
    """The app on ``pages/<page>.py`` (``None``: the Playground) with ``query`` as URL parameters, widget
    values ``state`` (by key) set beforehand, ``uploads`` ({registry key: model}) in this session's upload
    registry as the Checkpoints page leaves them and ``chosen`` picked in the sidebar; fails on an exception.

    The app opens on the Start page and then goes to ``page``, as a user does from the navigation;
    ``by_link`` opens ``page`` in the first run, as a shared link does."""
    from ui.session import MODEL_WIDGET, UPLOADS_KEY

    at = AppTest.from_file(APP, default_timeout=timeout)
    if uploads is not None:
        at.session_state[UPLOADS_KEY] = uploads
    if chosen is not None:
        at.session_state[MODEL_WIDGET] = chosen
    for key, value in (state or {}).items():
        at.session_state[key] = value
    for key, value in query.items():
        at.query_params[key] = value
    if not by_link:
        at.run()
    at.switch_page(f"pages/{page or 'playground'}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def figures(at: AppTest) -> dict[str, dict]:
    """The page's plotly figures by their ``layout.meta`` name."""
    out = {}
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        out[spec["layout"].get("meta", "")] = spec
    return out


def array(value) -> np.ndarray:
    """A plotly array from a figure's JSON (plotly sends numpy arrays as base64 'bdata')."""
    if isinstance(value, dict) and "bdata" in value:
        shape = [int(n) for n in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape)
    return np.asarray(value)


def texts(elements) -> list[str]:
    """The ``.value`` of each element (messages, markdown)."""
    return [e.value for e in elements]


def record_downloads(monkeypatch) -> dict[str, object]:
    """Every download button drawn from now on, by its file name's extension: the ``data`` it was given
    (bytes, or the function Streamlit calls on a click). AppTest has no runtime that would keep them."""
    from streamlit.delta_generator import DeltaGenerator

    made: dict[str, object] = {}
    original = DeltaGenerator.download_button

    def recording(self, *args, **kwargs):
        made[kwargs["file_name"].rsplit(".", 1)[1]] = kwargs["data"]
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    return made
