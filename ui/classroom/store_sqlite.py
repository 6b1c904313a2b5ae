"""The embedded class store: one SQLite file in WAL mode, shared by every server process on this machine.

Each thread has its own connection (``sqlite3`` connections are not shared between threads); a write
begins with ``BEGIN IMMEDIATE``, so concurrent writers queue on SQLite's lock (``busy_timeout``) instead
of failing when a read transaction would have to become a write. WAL lets the many readers (every
student's screen polls) read while one writer writes.

If the file is removed while the class runs, the next transaction finds it gone, writes the data its
still-open connection sees back to the same path, and goes on: nothing already
answered is lost (``restored`` counts how often). A file that cannot be written gives
``ClassError('store_read_only')``; one that cannot be opened ``ClassError('store_unavailable')``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import ClassError

BUSY_TIMEOUT_MS = 15_000


class SqliteTx:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def run(self, sql: str, *params: Any) -> int:
        return self.connection.execute(sql, params).rowcount

    def one(self, sql: str, *params: Any) -> tuple | None:
        return self.connection.execute(sql, params).fetchone()

    def all(self, sql: str, *params: Any) -> list[tuple]:
        return self.connection.execute(sql, params).fetchall()


class SqliteBackend:
    share_lock = ""  # BEGIN IMMEDIATE already serialises writers
    schema_lock = ""

    def __init__(self, path: str | os.PathLike, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.where = str(self.path)
        self.restored = 0
        self._local = threading.local()
        self._lock = threading.Lock()
        self._generation = 0
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ClassError("store_unavailable", f"{self.path.parent}: {err}") from err
        self._anchor, self._anchor_id = self._open_anchor()

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None,
                                             check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)  # fmt: skip
            else:
                connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                             timeout=BUSY_TIMEOUT_MS / 1000)  # fmt: skip
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at each checkpoint, never corrupt
            connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        except sqlite3.Error as err:
            raise _store_error(err, self.where) from err
        return connection

    def _open_anchor(self) -> tuple[sqlite3.Connection, tuple[int, int] | None]:
        """The connection a removed file is written back from, and the file it has open. It reads once,
        so that it holds the journal open too (a connection that never read cannot fold it in)."""
        anchor = self._connect()
        try:
            anchor.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as err:
            raise _store_error(err, self.where) from err
        return anchor, self._file_id()

    def _file_id(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def _check_file(self) -> None:
        """The file is where it was: else write it back (removed) or follow it (another process wrote it back)."""
        now = self._file_id()
        if now == self._anchor_id:
            return
        with self._lock:
            now = self._file_id()
            if now == self._anchor_id:
                return
            if now is None and not self.read_only:
                self._write_back()
            self._anchor.close()
            self._anchor, self._anchor_id = self._open_anchor()
            self._generation += 1

    def _write_back(self) -> None:
        """The removed file, written back from what this process still has open (under a lock file, so
        that one process of several does it): the journal is first folded into the removed file (which
        stays readable while open), then that file is copied back to its path."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.path}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.path.exists():
                return  # another process was first
            self._anchor.execute("PRAGMA wal_checkpoint(FULL)")
            opened = _open_copy(self.path)
            if opened is None:
                raise ClassError("store_unavailable", f"{self.path} was removed")
            partial = Path(f"{self.path}.restoring")
            shutil.copyfile(opened, partial)
            for suffix in ("-wal", "-shm"):  # the removed file's journal, which the new file must not read
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            os.replace(partial, self.path)
            self.restored += 1

    def _connection(self) -> sqlite3.Connection:
        local = self._local
        if getattr(local, "generation", None) != self._generation or getattr(local, "connection", None) is None:
            if getattr(local, "connection", None) is not None:
                local.connection.close()
            local.connection, local.generation = self._connect(), self._generation
        return local.connection

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[SqliteTx]:
        try:
            self._check_file()
            connection = self._connection()
            connection.execute("BEGIN IMMEDIATE" if write and not self.read_only else "BEGIN")
        except sqlite3.Error as err:
            raise _store_error(err, self.where) from err
        try:
            yield SqliteTx(connection)
            connection.execute("COMMIT")
        except BaseException as err:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            if isinstance(err, sqlite3.Error):
                raise _store_error(err, self.where) from err
            raise

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
        self._anchor.close()


def _open_copy(path: Path) -> str | None:
    """/proc/self/fd/N of this process's open descriptor of the removed file ``path`` (Linux), or None."""
    gone = f"{os.path.abspath(path)} (deleted)"
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == gone:
                return f"/proc/self/fd/{fd}"
    return None


def _store_error(err: sqlite3.Error, where: str) -> ClassError:
    text = str(err).lower()
    if "readonly" in text or "read-only" in text or "read only" in text:
        return ClassError("store_read_only", where)
    return ClassError("store_unavailable", f"{where}: {err}")
