"""The class store on PostgreSQL (psycopg 3), for a class served from several machines.

The connection URL comes from ``ATTENTION_LAB_CLASS_DB`` (see ``ui.classroom.open_store``). Each thread
has its own connection; a transaction whose connection was lost (the server restarted) is retried once
on a new one before it begins, so a server restart between two answers loses nothing; a failure inside
a transaction rolls it back and says ``ClassError('store_unavailable')`` (the student's screen keeps the
answer and sends it again). ``FOR SHARE`` on the question row makes an answer wait for a concurrent
reveal, so no answer lands after the reveal was shown.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from .errors import ClassError

CONNECT_TIMEOUT_S = 5


class PostgresTx:
    def __init__(self, connection) -> None:
        self.connection = connection

    def _execute(self, sql: str, params: tuple):
        return self.connection.execute(sql.replace("?", "%s"), params)

    def run(self, sql: str, *params: Any) -> int:
        return self._execute(sql, params).rowcount

    def one(self, sql: str, *params: Any) -> tuple | None:
        return self._execute(sql, params).fetchone()

    def all(self, sql: str, *params: Any) -> list[tuple]:
        return self._execute(sql, params).fetchall()


class PostgresBackend:
    share_lock = " FOR SHARE"
    schema_lock = "SELECT pg_advisory_xact_lock(4949)"

    def __init__(self, url: str) -> None:
        import psycopg  # only when a PostgreSQL store is used

        self.psycopg = psycopg
        self.url = url
        self.where = "PostgreSQL"
        self._local = threading.local()

    def _connect(self):
        try:
            return self.psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S)
        except self.psycopg.Error as err:
            raise ClassError("store_unavailable", f"{self.where}: {err}") from err

    def _connection(self, fresh: bool = False):
        connection = getattr(self._local, "connection", None)
        if fresh or connection is None or connection.closed or connection.broken:
            if connection is not None:
                with contextlib.suppress(Exception):
                    connection.close()
            connection = self._local.connection = self._connect()
        return connection

    def _begin(self):
        """A connection in a new transaction; a connection that died since its last use is replaced once."""
        connection = self._connection()
        try:
            connection.execute("SELECT 1")  # begins the transaction; fails at once on a dead connection
            return connection
        except self.psycopg.OperationalError:
            connection = self._connection(fresh=True)
            try:
                connection.execute("SELECT 1")
            except self.psycopg.Error as err:
                raise ClassError("store_unavailable", f"{self.where}: {err}") from err
            return connection

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[PostgresTx]:
        connection = self._begin()
        try:
            yield PostgresTx(connection)
            connection.commit()
        except BaseException as err:
            with contextlib.suppress(Exception):
                connection.rollback()
            if isinstance(err, self.psycopg.errors.ReadOnlySqlTransaction):
                raise ClassError("store_read_only", self.where) from err
            if isinstance(err, self.psycopg.Error):
                raise ClassError("store_unavailable", f"{self.where}: {err}") from err
            raise

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()
            self._local.connection = None
