"""Figures shared by every session: a figure function's result kept by exactly what it was given.

Building a Plotly figure in Python is most of what a page costs the server: plotly validates every
property it is given (``update_layout`` alone was 55 % of the server's script time over five pages'
first visits, ``bench/bench_first_visit.py``). A class opening a page sends the same default sentence,
model and language, so the same figures are built again for every student. Here a page's figure
module is wrapped (``figs = shared_figures(ui.figures.vision)``): a call made while a page runs is
keyed by a digest of all its arguments (arrays by their bytes, shape and dtype), the session's language
and its presenter font scale; the first call builds the figure and keeps its plain spec (a dict), and
every later call with the same inputs, in any session, gets that spec back without building anything.

The cache is content-addressed: a figure is only ever returned to a caller who passed the very same
inputs, so nothing of one session (an upload's numbers included) reaches another that did not have it.
Arguments of a type that cannot be digested exactly (a model object, a callable) skip the cache, and
so does any call made outside a running page (tests, the CLI), which gets the ordinary figure.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
from types import ModuleType
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from .compute import ByteBudgetCache, approx_nbytes
from .figures.common import at_font_scale
from .figures.spec import legible_spec

FIGURE_CACHE_BYTES = 96 * 1024**2
MAX_DIGEST_BYTES = 64 * 1024**2  # arguments larger than this are not worth hashing: build the figure
_ATOMS = (str, int, float, bool, type(None), complex)


class SharedFigure(go.Figure):
    """A figure that is its spec: Streamlit reads ``to_dict()`` and serialises it; nothing validates
    or copies the (shared, never modified) spec again. Its ``layout``/``data`` attributes are empty:
    a page shows it, it does not edit it."""

    def __init__(self, spec: dict) -> None:
        super().__init__()
        self._shared_spec = spec

    def to_dict(self) -> dict:
        return {"data": self._shared_spec["data"], "layout": self._shared_spec["layout"]}

    def to_plotly_json(self) -> dict:
        return self.to_dict()


@st.cache_resource(show_spinner=False)
def figure_store() -> ByteBudgetCache:
    """Built figures' specs, shared by all sessions (at most FIGURE_CACHE_BYTES)."""
    return ByteBudgetCache(FIGURE_CACHE_BYTES)


class _Undigestable(Exception):
    pass


def _feed(h, value: Any, budget: list[int]) -> None:
    """Feed ``value`` into the hash ``h`` with its type, exactly; raises _Undigestable otherwise."""
    if isinstance(value, _ATOMS) or isinstance(value, enum.Enum):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, np.generic):
        h.update(f"{value.dtype}:{value!r};".encode())
    elif isinstance(value, np.ndarray | torch.Tensor):
        array = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
        if array.dtype == object:
            _feed(h, array.tolist(), budget)
            return
        budget[0] -= array.nbytes
        if budget[0] < 0:
            raise _Undigestable
        h.update(f"nd{array.shape}{array.dtype};".encode())
        h.update(np.ascontiguousarray(array).tobytes())
    elif isinstance(value, list | tuple):
        h.update(f"{type(value).__name__}{len(value)}(".encode())
        for item in value:
            _feed(h, item, budget)
        h.update(b")")
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}(".encode())
        for key, item in value.items():  # in order: a figure may draw its entries in this order
            _feed(h, key, budget)
            _feed(h, item, budget)
        h.update(b")")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"{type(value).__module__}.{type(value).__qualname__}(".encode())
        for field in dataclasses.fields(value):
            h.update(field.name.encode())
            _feed(h, getattr(value, field.name), budget)
        h.update(b")")
    else:
        raise _Undigestable


def figure_key(name: str, args: tuple, kwargs: dict, lang: str, scale: float) -> str | None:
    """A digest of everything a figure function's result depends on, or None when an argument cannot
    be digested exactly (then the figure is built as usual)."""
    h = hashlib.blake2b(digest_size=24)
    try:
        _feed(h, (name, lang, scale, args, sorted(kwargs.items())), [MAX_DIGEST_BYTES])
    except _Undigestable:
        return None
    return h.hexdigest()


def _session_context() -> tuple[str, float] | None:
    """(language, figure font scale) of the running page, or None outside one."""
    from .streamlit_internals import run_context

    if run_context() is None:
        return None
    from .i18n import current_lang
    from .presenter import figure_font_scale

    return current_lang(), figure_font_scale()


def shared(fn, name: str):
    """``fn`` with its figures kept in the shared store (see the module docstring)."""

    makes_figures = True  # until it returns something else (a label list, a clicked cell): then no digest
    written_as_spec = getattr(fn, "spec", None)  # ``ui.figures.spec.figure_from_spec``

    @functools.wraps(fn)
    def call(*args, **kwargs):
        nonlocal makes_figures
        if any(isinstance(a, SharedFigure) for a in (*args, *kwargs.values())):
            raise TypeError(f"{name} was given a shared figure: a figure to edit comes from the module itself")
        if not makes_figures:
            return fn(*args, **kwargs)
        context = _session_context()
        key = None if context is None else figure_key(name, args, kwargs, *context)
        if key is None:
            return fn(*args, **kwargs)
        store = figure_store()
        spec = store.get(key)
        if spec is not None:
            return SharedFigure(spec)
        if written_as_spec is not None:  # a plain dict: no plotly object built at all
            spec = legible_spec(written_as_spec(*args, **kwargs), context[1])
        else:
            fig = fn(*args, **kwargs)
            if not isinstance(fig, go.Figure):
                makes_figures = False
                return fig
            spec = at_font_scale(fig, context[1]).to_dict()  # this session's fonts, as ``ui.charts.show`` sets them
        store.put(key, spec, approx_nbytes(spec))
        return SharedFigure(spec)

    return call


class _SharedModule:
    """Attribute access to a figure module whose functions keep their figures (``shared``)."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, attr: str):
        value = getattr(self._module, attr)
        if callable(value) and not isinstance(value, type) and not attr.startswith("_"):
            value = shared(value, f"{self._module.__name__}.{attr}")
            setattr(self, attr, value)  # wrapped once
        return value


def shared_figures(module: ModuleType) -> Any:
    """``module`` (one of ``ui.figures``) as pages call it: figures kept across sessions."""
    return _SharedModule(module)
