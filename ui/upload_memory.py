"""What uploads hold in this server's memory: counted per session, kept within budgets, and
released when the session ends.

Everything an upload keeps in a browser session's state counts: the uploaded files' bytes (an
uploader's value), the file being recognised (its tensors and vocabulary lists), the vocabularies
read from their own files, the models in use (weights, vocabularies, tokenizer), the course ViTs,
and the session's memo of analyses.

A session ends, for this server, when its browser has been gone for :data:`RELEASE_AFTER_S`.
Streamlit keeps a disconnected session's state for a reconnect (two minutes) and only drops it
when another session disconnects later, so without help a class's uploads stay in memory after
every browser has closed. Here each session that uploads is noted in :data:`REGISTRY`; a
background thread compares the noted sessions with the runtime's live ones every
:data:`CHECK_EVERY_S`, deletes the upload keys from the state of those that ended, removes their
uploaded files, and hands the freed heap back to the system.
"""

from __future__ import annotations

import dataclasses
import gc
import io
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from . import session
from . import streamlit_internals as internals
from .i18n import t
from .work_slots import give_memory_back, machine_bytes

MB = 1_000_000


def default_budgets(machine: int) -> tuple[int, int]:
    """(per session, per server) upload budgets in bytes for a machine with ``machine`` bytes of memory:
    a sixteenth of it per session (at least 1,000 MB: the published SmolLM2-135M GGUF holds 98 MB as a
    file and 550 MB dequantised; at most 2,000 MB) and a quarter for the whole server (1,500-8,000 MB)."""
    session_bytes = min(max(machine // 16, 1_000 * MB), 2_000 * MB)
    server_bytes = min(max(machine // 4, 1_500 * MB), 8_000 * MB)
    return session_bytes, max(server_bytes, session_bytes)


def _budget(variable: str, default: int) -> int:
    """An operator's budget in MB from ``variable``, else ``default`` bytes."""
    value = os.environ.get(variable)
    return default if value is None else int(float(value) * MB)


_SESSION_DEFAULT, _SERVER_DEFAULT = default_budgets(machine_bytes())
SESSION_UPLOAD_BYTES = _budget("ATTENTION_LAB_SESSION_UPLOAD_MB", _SESSION_DEFAULT)
SERVER_UPLOAD_BYTES = _budget("ATTENTION_LAB_SERVER_UPLOAD_MB", _SERVER_DEFAULT)
RELEASE_AFTER_S = float(os.environ.get("ATTENTION_LAB_RELEASE_AFTER_S", 30))
CHECK_EVERY_S = 5.0
BUDGET_KEYS = {"session": "checkpoints.budget_session", "server": "checkpoints.budget_server"}  # literal keys
# the session-state keys that hold uploads: ui.session's registry, memo and pending file; the rest are
# literal where they are written (pages/checkpoints.py, ui/vision_upload.py, the uploaders' widget keys)
HEAVY_KEYS = (
    session.UPLOADS_KEY,
    session.MEMO_KEY,
    session.PENDING_UPLOAD_KEY,
    "ckpt_vocabs",
    "vision_upload_outcome",
    # the uploaders themselves: a widget's value holds the file's bytes as long as the session's state lives
    "ckpt_file",
    "ckpt_vocab",
    "ckpt_target_vocab",
    "vupload",
)


def held_bytes(obj: Any) -> int:
    """Approximate bytes ``obj`` keeps alive: tensors (each storage once), arrays, strings and the
    containers, dataclasses and modules holding them. Lists of strings (a vocabulary) are summed
    in one pass; a 1,000,000-word vocabulary takes ~0.1 s."""
    return _Counter().count(obj)


class _Counter:
    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.storages: set[int] = set()

    def count(self, obj: Any, depth: int = 0) -> int:
        if obj is None or depth > 12 or id(obj) in self.seen or isinstance(obj, (bool, int, float, type)):
            return 0
        self.seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            return self._tensor(obj)
        if isinstance(obj, np.ndarray):
            return obj.nbytes
        if isinstance(obj, (str, bytes)):
            return sys.getsizeof(obj)
        if isinstance(obj, io.BytesIO):  # an uploaded file's bytes
            with obj.getbuffer() as view:
                return view.nbytes
        if isinstance(obj, torch.nn.Module):
            return sum(self._tensor(t) for t in obj.state_dict(keep_vars=True).values()) + 1024
        nbytes = getattr(obj, "nbytes", None)
        if isinstance(nbytes, int):  # ByteBudgetCache and the like say what they hold
            return nbytes
        return self._container(obj, depth)

    def _tensor(self, tensor: torch.Tensor) -> int:
        storage = tensor.untyped_storage()
        if storage.data_ptr() in self.storages:
            return 0
        self.storages.add(storage.data_ptr())
        return storage.nbytes()

    def _container(self, obj: Any, depth: int) -> int:
        if isinstance(obj, (list, tuple)) and obj and all(type(x) is str for x in obj[:64]):
            return sys.getsizeof(obj) + sum(map(sys.getsizeof, obj))
        if isinstance(obj, dict):
            items = [*obj.keys(), *obj.values()]
            strings = sum(map(sys.getsizeof, (x for x in items if type(x) is str)))
            ints = 32 * sum(1 for x in obj.values() if type(x) is int)  # e.g. a vocabulary's token -> id
            rest = sum(self.count(x, depth + 1) for x in items if type(x) not in (str, int))
            return sys.getsizeof(obj) + strings + ints + rest
        if isinstance(obj, (list, tuple, set, frozenset)):
            return sys.getsizeof(obj) + sum(self.count(x, depth + 1) for x in obj)
        if dataclasses.is_dataclass(obj):
            return sum(self.count(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj))
        if hasattr(obj, "__dict__"):
            return sum(self.count(v, depth + 1) for v in vars(obj).values())
        return sys.getsizeof(obj)


def state_bytes(state: Any, skip: tuple[str, ...] = ()) -> int:
    """Bytes held under the upload keys of one session's state (a mapping), those in ``skip`` left out."""
    counter = _Counter()
    return sum(counter.count(state[key]) for key in HEAVY_KEYS if key not in skip and key in state)


_runtime_says_active = internals.runtime_session_active  # True while the browser of a session is connected
_remove_files = internals.remove_session_files  # the session's uploaded files dropped from the runtime's store


@dataclasses.dataclass
class _Session:
    state: Any  # the session's (thread-safe) state object: deleting its upload keys frees them
    gone_since: float | None = None


class UploadRegistry:
    """Sessions that hold uploads; :meth:`prune` releases those whose browser has been gone for
    ``release_after_s``. ``is_active(session_id)`` and ``clock()`` are injectable for tests."""

    def __init__(
        self,
        is_active: Callable[[str], bool] = _runtime_says_active,
        release_after_s: float = RELEASE_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
        remove_files: Callable[[str], None] = _remove_files,
    ) -> None:
        self.is_active, self.release_after_s, self.clock, self.remove_files = (
            is_active,
            release_after_s,
            clock,
            remove_files,
        )
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.released_sessions = 0
        self.released_bytes = 0

    def note(self, session_id: str, state: Any) -> None:
        """``session_id`` holds (or is about to hold) uploads in ``state``."""
        with self._lock:
            entry = self._sessions.get(session_id)
            if entry is None or entry.state is not state:
                self._sessions[session_id] = _Session(state)
            else:
                entry.gone_since = None

    def sessions(self) -> list[str]:
        with self._lock:
            return list(self._sessions)

    def session_bytes(self, session_id: str, skip: tuple[str, ...] = ()) -> int:
        with self._lock:
            entry = self._sessions.get(session_id)
        return 0 if entry is None else state_bytes(entry.state, skip)

    def total_bytes(self, skip_session: str | None = None) -> int:
        """Bytes all noted sessions' uploads hold (``skip_session`` left out)."""
        return sum(self.session_bytes(s) for s in self.sessions() if s != skip_session)

    def prune(self) -> int:
        """Release the uploads of every session gone for longer than ``release_after_s``; the
        number of sessions released."""
        now, ended = self.clock(), []
        with self._lock:
            for session_id, entry in list(self._sessions.items()):
                if self.is_active(session_id):
                    entry.gone_since = None
                elif entry.gone_since is None:
                    entry.gone_since = now
                elif now - entry.gone_since >= self.release_after_s:
                    ended.append((session_id, self._sessions.pop(session_id)))
        freed = 0
        for session_id, entry in ended:
            freed += state_bytes(entry.state)
            release_state(entry.state)
            self.remove_files(session_id)
        if ended:
            self.released_sessions += len(ended)
            self.released_bytes += freed
            gc.collect()  # models and modules hold reference cycles
            give_memory_back()
            _log().info("Released the uploads of %d ended session(s): %.0f MB.", len(ended), freed / MB)
        return len(ended)

    def start(self, every_s: float = CHECK_EVERY_S) -> None:
        """Prune every ``every_s`` seconds in a daemon thread (started once)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._loop, args=(every_s,), name="upload-release", daemon=True)
        self._thread.start()

    def _loop(self, every_s: float) -> None:
        while True:
            time.sleep(every_s)
            try:
                self.prune()
            except Exception:  # noqa: BLE001 - a failed round must not end the releasing for good
                continue


def _log():
    from streamlit.logger import get_logger

    return get_logger(__name__)


def release_state(state: Any) -> None:
    """Delete the upload keys from one session's state."""
    for key in HEAVY_KEYS:
        try:
            del state[key]
        except KeyError:
            pass


REGISTRY = UploadRegistry()  # process-wide: one per server


def note_this_session() -> str | None:
    """Note the running session in :data:`REGISTRY` (and start its releasing thread); its id, or
    None outside a script run."""
    ctx = internals.run_context()
    if ctx is None:
        return None
    REGISTRY.note(ctx.session_id, ctx.session_state)
    if internals.runtime_exists():
        REGISTRY.start()
    return ctx.session_id


def over_budget(new_bytes: int, skip: tuple[str, ...] = ()) -> tuple[str, int, int] | None:
    """None when ``new_bytes`` more fit this session's and the server's upload budgets, else
    (``"session"`` or ``"server"``, bytes already held, the budget). ``skip``: this session's keys
    that the new object replaces."""
    session_id = note_this_session()
    if session_id is None:
        return None
    held = REGISTRY.session_bytes(session_id, skip)
    if held + new_bytes > SESSION_UPLOAD_BYTES:
        return "session", held, SESSION_UPLOAD_BYTES
    others = REGISTRY.total_bytes(skip_session=session_id)
    if others + held + new_bytes > SERVER_UPLOAD_BYTES:
        return "server", others + held, SERVER_UPLOAD_BYTES
    return None


def budget_error(new_bytes: int, replaced: tuple[str, ...] = ()) -> str | None:
    """The user's message when ``new_bytes`` more would pass this session's or the server's upload
    budget (:func:`over_budget`), else None."""
    over = over_budget(new_bytes, replaced)
    if over is None:
        return None
    where, held, limit = over
    fields = {"need": f"{new_bytes / MB:,.0f}", "held": f"{held / MB:,.0f}", "limit": f"{limit / MB:,.0f}"}
    return t(BUDGET_KEYS[where], **fields)
