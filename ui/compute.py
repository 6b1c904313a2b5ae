"""The one cached service that every page's heavy computation goes through.

``compute(kind, key, fn, model=...)`` gives ``fn()``'s value: from the cache while it holds it,
else run inside one of the process's analysis slots (``ui.work_slots``) and kept. Where it is kept
depends on the model the value comes from:

- a bundled model: one store shared by every session, at most CACHE_BYTES in all, least recently
  used dropped first (a class asking about the same sentence computes it once);
- an uploaded model (``upload: <file>``, a name only unique within its session): this session's
  store (at most SESSION_BYTES), under the upload's identity; no other session can reach it, and
  forgetting the upload (``ui.session.forget_results``) drops its entries;
- ``per_session=True``: this session's store whatever the model, for values a page changes in place
  (a figure whose outline moves).

Values in the shared store are handed to every session as they are, not copied: read them only.
``st.cache_resource`` stays for loading models (``ui.models.load_shared``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import nullcontext
from functools import partial
from typing import Any, TypeVar

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from . import session, work_slots

T = TypeVar("T")
MB = 1_000_000
# Values shared by every session hold at most this many bytes in all; set ATTENTION_LAB_CACHE_MB to
# change it. One 1,024-token input's analysis is ~67 MB.
CACHE_BYTES = int(float(os.environ.get("ATTENTION_LAB_CACHE_MB", 256)) * MB)
SESSION_BYTES = 64 * MB  # one session's values: its uploads' analyses, its figures
_MISSING = object()
_flights: dict[Hashable, threading.Event] = {}  # (store, key) being computed now, process-wide
_flights_lock = threading.Lock()


class ByteBudgetCache:
    """A thread-safe least-recently-used store bounded by the bytes of what it holds.

    ``put`` drops the least recently used entries until the new one fits; an entry larger than
    the whole budget is not stored (the caller still has it). Iterating gives the keys; ``del``
    removes one."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key][0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            if nbytes > self.max_bytes:
                return
            while self._items and self._bytes + nbytes > self.max_bytes:
                self._bytes -= self._items.popitem(last=False)[1][1]
            self._items[key] = (value, nbytes)
            self._bytes += nbytes

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __delitem__(self, key: Hashable) -> None:
        with self._lock:
            self._bytes -= self._items.pop(key)[1]


@st.cache_resource
def shared_store() -> ByteBudgetCache:
    """Values computed with bundled models, shared by all sessions (at most CACHE_BYTES)."""
    return ByteBudgetCache(CACHE_BYTES)


def session_store() -> ByteBudgetCache:
    """This session's values (at most SESSION_BYTES): its uploads' results and per-session figures."""
    return session.upload_memo(lambda: ByteBudgetCache(SESSION_BYTES), lambda m: isinstance(m, ByteBudgetCache))


def store_for(model: str, per_session: bool = False) -> ByteBudgetCache:
    """The store of values computed with ``model`` (a bundled name or an upload's key)."""
    return session_store() if per_session or session.is_upload(model) else shared_store()


def upload_identity(model: str) -> int | None:
    """For an upload, which weights this session registered under that name (their object's id: a
    replaced upload never meets the results of the one before); None for a bundled model."""
    if not session.is_upload(model):
        return None
    registered = session.uploads().get(model)
    return id(getattr(registered, "model", registered))


def full_key(kind: str, key: Hashable, model: str) -> tuple:
    """The store key: the model first (``ui.session.forget_results`` drops an upload's entries by it)."""
    return (model, upload_identity(model), kind, key)


def compute(
    kind: str,
    key: Hashable,
    fn: Callable[[], T],
    *,
    model: str,
    nbytes: int | Callable[[T], int] | None = None,
    slot_bytes: int = 0,
    per_session: bool = False,
    slot: bool = True,
) -> T:
    """``fn()`` computed with ``model``, once per (``kind``, ``key``) while the cache holds it.

    ``key`` must hold every input of ``fn`` other than the model (device, lengths, texts, settings).
    ``nbytes``: the value's size (or a function of the value giving it); by default estimated from
    its arrays, tensors and strings (:func:`approx_nbytes`). ``slot_bytes``: the scratch memory the
    run is expected to need (memory is handed back after large ones); ``slot=False``: ``fn`` bounds its own
    work (it waits for the process's decoding scheduler) and takes no analysis slot. Errors from ``fn``
    propagate and nothing is kept."""
    options = dict(nbytes=nbytes, slot_bytes=slot_bytes, per_session=per_session, slot=slot)
    return later(kind, key, fn, model=model, **options)()


def later(
    kind: str,
    key: Hashable,
    fn: Callable[[], T],
    *,
    model: str,
    nbytes: int | Callable[[T], int] | None = None,
    slot_bytes: int = 0,
    per_session: bool = False,
    slot: bool = True,
) -> Callable[[], T]:
    """:func:`compute` as a function to call later from any thread (a download built on click runs
    outside the script, where the session is out of reach): the store and the key are chosen now."""
    store = store_for(model, per_session)
    return partial(cached, store, full_key(kind, key, model), fn, nbytes=nbytes, slot_bytes=slot_bytes, slot=slot)


def computed(kind: str, **options: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A decorator: calls of the function go through :func:`compute` under ``kind``. Its first argument
    is the model key; the others, with defaults filled in, are the key (so they must be hashable).
    ``options`` are :func:`compute`'s (``nbytes``, ``slot_bytes``, ``per_session``, ``slot``)."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def through_the_service(model: str, *args: Any, **kwargs: Any) -> T:
            bound = signature.bind(model, *args, **kwargs)
            bound.apply_defaults()
            key = tuple(bound.arguments.values())[1:]
            return compute(kind, key, lambda: fn(*bound.args, **bound.kwargs), model=model, **options)

        return through_the_service

    return decorate


def cached(
    store: ByteBudgetCache,
    key: Hashable,
    fn: Callable[[], T],
    *,
    nbytes: int | Callable[[T], int] | None = None,
    slot_bytes: int = 0,
    slot: bool = True,
) -> T:
    """The value under ``key`` in ``store``; on a miss ``fn()`` runs in an analysis slot (``slot=False``:
    outside any) and is kept. While one caller computes a key, another asking for it waits for that value
    instead of computing it again (a class on the teacher's shared link asking the same thing at once
    computes it once); a waiter already inside a slot computes it itself (waiting there could hold the
    slot the first one needs)."""
    found = store.get(key, _MISSING)
    if found is not _MISSING:
        return found
    flight = (id(store), key)
    with _flights_lock:
        running = _flights.get(flight)
        mine = None if running is not None else _flights.setdefault(flight, threading.Event())
    if running is not None and not work_slots.holding_slot():
        running.wait()
        found = store.get(key, _MISSING)
        if found is not _MISSING:
            return found  # else it failed, or was too large to keep: computed here
    try:
        with work_slots.analysis_slot(slot_bytes) if slot else nullcontext(work_slots.SlotUse()) as use:
            value = fn()
            size = approx_nbytes(value) if nbytes is None else nbytes(value) if callable(nbytes) else nbytes
            use.expect(size)
        store.put(key, value, size)
    finally:
        if mine is not None:
            with _flights_lock:
                del _flights[flight]
            mine.set()
    return value


def approx_nbytes(value: Any, depth: int = 0) -> int:
    """Approximate bytes held by ``value``: numpy arrays and tensors by their data, strings by length,
    containers, dataclasses and plain objects by their parts (10 levels deep at most)."""
    if isinstance(value, np.ndarray):
        return value.nbytes + 112
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement() + 112
    if isinstance(value, str | bytes):
        return len(value) + 49
    if isinstance(value, go.Figure):
        return len(value.to_json())
    if depth >= 10:
        return sys.getsizeof(value)
    if isinstance(value, list | tuple | set | frozenset):
        return 56 + 8 * len(value) + sum(approx_nbytes(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return 64 + sum(approx_nbytes(k, depth + 1) + approx_nbytes(v, depth + 1) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return 64 + sum(approx_nbytes(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return 64 + approx_nbytes(vars(value), depth + 1)
    return sys.getsizeof(value)
