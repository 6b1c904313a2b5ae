"""Run a reader of untrusted bytes in a separate process with a wall-time and a memory limit.

A hostile upload (a safetensors header listing a million tensors, a zip bomb, a pickle built to
make the reader allocate gigabytes) must not stall or bloat the server that every student shares.
:func:`run_isolated` calls ``func(*args)`` in a child process and returns its result, or raises a
:class:`~transformer.checkpoints.errors.CheckpointError` (a ``ValueError``) that says which limit
was hit ("took longer than 10 s", "needed more than 1024 MB").

How:

- On Linux the child is a ``fork`` of the server: ready in milliseconds, with torch already
  imported, and without re-running the main script (``spawn`` and ``forkserver`` re-import
  ``__main__``, which under Streamlit is the app script itself). The child uses one thread and
  touches nothing of the server but the reader it runs; should it ever hang, the time limit ends it.
  Where ``fork`` does not exist, ``func`` runs in the calling process without limits.
- The child lowers its priority (``nice``), uses one thread, and caps its address space with
  ``resource.setrlimit(RLIMIT_AS)`` at its size when it starts plus the memory limit (Linux only;
  skipped where the ``resource`` module or the limit is unsupported).
- The parent waits at most the time limit, then kills the child.
- Results travel back as bytes written by ``torch.save`` and read with
  ``torch.load(weights_only=True)``: tensors, plain containers, strings and numbers only. Nothing
  coming back from the child is unpickled with the full unpickler.
- At most :data:`MAX_CONCURRENT` children run at once per server process, so many hostile uploads
  at the same time cannot fork many memory-hungry children.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

import torch

from .errors import CheckpointError, CodedError, LimitError

TIME_LIMIT_S = 30.0
MEMORY_LIMIT_MB = 1536
MAX_CONCURRENT = 2
QUEUE_WAIT_S = 60.0  # how long a request waits for a free slot before it is told the server is busy

OK, ERROR, MEMORY = b"O", b"E", b"M"
ERRORS: dict[str, type[Exception]] = {"CheckpointError": CheckpointError, "ValueError": ValueError}

_slots = threading.BoundedSemaphore(MAX_CONCURRENT)  # process-wide limit, not per-request state
_in_child = False  # True only inside a child started by run_isolated


def in_isolated_child() -> bool:
    """True inside a child process of :func:`run_isolated` (a reader may change process-wide
    settings there: they end with the child)."""
    return _in_child


def _context() -> multiprocessing.context.BaseContext | None:
    """The fork context on Linux; None where fork is missing (the reader then runs in-process)."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None


def _vm_size_bytes() -> int | None:
    """This process's virtual memory size (Linux /proc), or None where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _limit_memory(memory_mb: float) -> None:
    """Cap the address space at its present size plus ``memory_mb``; silently skipped where unsupported."""
    try:
        import resource
    except ImportError:  # not on Linux/Unix
        return
    base = _vm_size_bytes()
    if base is None:
        return
    limit = base + int(memory_mb * 1024**2)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass


def _to_bytes(value: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _from_bytes(data: bytes) -> object:
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def _is_out_of_memory(err: BaseException) -> bool:
    """Python's MemoryError, or an allocator's failure that torch or a Rust reader reports as an error."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or "can't allocate memory" in text or "memory allocation" in text


def _describe(err: BaseException) -> dict:
    """{'type', 'message'}: our own errors keep their message (a CodedError its code and values too);
    anything else is named in it."""
    if isinstance(err, CodedError):
        return {"type": "CodedError", "message": str(err), "code": err.code, "values": err.values}
    for name, kind in ERRORS.items():
        if isinstance(err, kind):
            return {"type": name, "message": str(err)}
    return {"type": "CheckpointError", "message": f"{type(err).__name__}: {err}"}


def _child(conn: Connection, func: Callable, args: tuple, memory_mb: float) -> None:
    """Runs in the child: limits, the call, and exactly one tagged message back."""
    global _in_child
    _in_child = True
    try:
        os.nice(10)  # other students' requests first
    except OSError:
        pass
    torch.set_num_threads(1)
    _limit_memory(memory_mb)
    try:
        result = func(*args)
    except BaseException as err:  # noqa: BLE001 - everything goes back as a message, never a traceback
        result, message = None, MEMORY if _is_out_of_memory(err) else ERROR + json.dumps(_describe(err)).encode()
    else:
        try:
            message = OK + _to_bytes(result)
        except BaseException:  # noqa: BLE001 - torch's writer fails ("unexpected pos") when the cap is reached
            message = MEMORY
    try:
        conn.send_bytes(message)
    except MemoryError:
        conn.send_bytes(MEMORY)
    finally:
        conn.close()


def run_isolated(
    func: Callable,
    *args,
    time_limit_s: float = TIME_LIMIT_S,
    memory_limit_mb: float = MEMORY_LIMIT_MB,
    what: str = "Reading the file",
):
    """``func(*args)`` in a child process; its return value (tensors, plain containers and scalars).

    ``func`` must be importable by name (a module-level function) and its arguments picklable.
    Raises CheckpointError (a ValueError) when the child ran out of time or memory, crashed, or
    raised; a CheckpointError or ValueError raised by ``func`` keeps its message.
    """
    if not _slots.acquire(timeout=QUEUE_WAIT_S):
        message = f"{what} has to wait: the server is busy reading other uploads. Try again in a minute."
        raise LimitError(message, "busy", QUEUE_WAIT_S)
    try:
        return _run(func, args, time_limit_s, memory_limit_mb, what)
    finally:
        _slots.release()


def _run(func: Callable, args: tuple, time_limit_s: float, memory_limit_mb: float, what: str):
    ctx = _context()
    if ctx is None:
        return func(*args)
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(sender, func, args, memory_limit_mb), daemon=True)
    process.start()
    sender.close()
    started = time.monotonic()
    try:
        message = _receive(receiver, process, time_limit_s)
    finally:
        receiver.close()
        _stop(process)
    if message is None:
        raise LimitError(f"{what} took longer than {time_limit_s:g} s, so it was stopped.", "time", time_limit_s)
    return _result(message, process.exitcode, memory_limit_mb, what, time.monotonic() - started)


def _receive(receiver: Connection, process, time_limit_s: float) -> bytes | None:
    """The child's message; b'' when it died without one; None when the time ran out."""
    if not receiver.poll(time_limit_s):
        return None if process.is_alive() else b""
    try:
        return receiver.recv_bytes()
    except (EOFError, OSError):
        return b""


def _stop(process) -> None:
    process.join(timeout=1.0)
    if process.is_alive():
        process.kill()
        process.join(timeout=5.0)


def _result(message: bytes, exitcode: int | None, memory_limit_mb: float, what: str, seconds: float):
    too_big = f"{what} needed more than {memory_limit_mb:g} MB of memory, so it was stopped."
    if message == MEMORY:
        raise LimitError(too_big, "memory", memory_limit_mb)
    if message.startswith(OK):
        return _from_bytes(message[1:])
    if message.startswith(ERROR):
        error = json.loads(message[1:].decode())
        if "code" in error:
            raise CodedError(error["code"], error["message"], **error["values"])
        raise ERRORS.get(error["type"], CheckpointError)(error["message"])
    # no message: killed by the kernel or aborted by a native reader, almost always out of memory
    stopped = f"{too_big[:-1]} (the reader stopped after {seconds:.1f} s, exit status {exitcode})."
    raise LimitError(stopped, "memory", memory_limit_mb)


def read_checkpoint_isolated(path, max_mb: float | None = None, **limits):
    """:func:`~transformer.checkpoints.safe_load.read_checkpoint` run by :func:`run_isolated`; a RawCheckpoint.

    ``limits``: ``time_limit_s``, ``memory_limit_mb`` as for run_isolated.
    """
    from pathlib import Path

    from .safe_load import MAX_FILE_MB, RawCheckpoint, read_checkpoint_plain

    path = Path(path)
    what = f"Reading {path.name}"
    return RawCheckpoint(**run_isolated(read_checkpoint_plain, str(path), max_mb or MAX_FILE_MB, what=what, **limits))


def _vocab_tokens(path: str) -> list[str]:
    """In the child: the vocabulary file's tokens, in id order."""
    from .vocabulary import read_vocab_file

    return read_vocab_file(path).itos


def read_vocab_isolated(path, **limits):
    """:func:`~transformer.checkpoints.vocabulary.read_vocab_file` run by :func:`run_isolated`; a Vocab."""
    from pathlib import Path

    from ..core.tokenizer import Vocab

    path = Path(path)
    return Vocab.from_itos(run_isolated(_vocab_tokens, str(path), what=f"Reading {path.name}", **limits))
