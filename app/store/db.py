"""Connections to the class store: SQLite (WAL, the default) or PostgreSQL, behind one small interface.

Statements are written once, with ``?`` placeholders, and run on either database: for PostgreSQL the
``?`` of a *constant* statement becomes psycopg's ``%s`` (statements never hold ``%`` or a literal ``?``;
values always travel as parameters). Each thread has its own connection (Streamlit runs every session's
script in a thread of its own). Any failure to reach the database becomes :class:`StoreUnavailable`,
whose message a page can show as it is; the cause goes to the log.

SQLite runs in WAL mode with ``synchronous=NORMAL``: a committed answer survives the app process being
killed (it is in the WAL file); only a power loss of the machine can take the last transactions back.
Several processes on one machine share the file; a writer waits up to ``BUSY_S`` for another.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BUSY_S = 10.0  # seconds a SQLite writer waits for another process's write
CONNECT_S = 5  # seconds to reach PostgreSQL before the page is told the store is away

Run = Callable[[str, Sequence[Any]], list[tuple]]


class StoreUnavailable(Exception):
    """The store cannot be reached (a missing or read-only data directory, a database that is down)."""

    MESSAGE = ("The class store cannot be reached right now, so rooms and polls are paused. Your pages still work; "
               "try again in a minute, and if it lasts, tell whoever runs this server.")  # fmt: skip

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class Sqlite:
    """The embedded default: one file, WAL mode, one connection per thread."""

    kind = "sqlite"
    lock_schema = None  # BEGIN IMMEDIATE already serialises writers

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_S, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Run]:
        """A write transaction (``BEGIN IMMEDIATE``: the write lock is taken at once, so read-then-write is safe)."""
        try:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
        except (OSError, sqlite3.Error) as exc:
            self._drop()
            raise _unavailable(exc) from exc
        try:
            yield lambda sql, params=(): _sqlite_rows(conn, sql, params)
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """One statement in its own transaction; the rows it returns (none for a write)."""
        try:
            return _sqlite_rows(self._connection(), sql, params)
        except (OSError, sqlite3.Error) as exc:
            self._drop()
            raise _unavailable(exc) from exc

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


def _sqlite_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[tuple]:
    try:
        return conn.execute(sql, tuple(params)).fetchall()
    except sqlite3.Error as exc:
        raise _unavailable(exc) from exc


class Postgres:
    """PostgreSQL through psycopg 3 (``AP_DATABASE_URL``), autocommit outside explicit transactions."""

    kind = "postgresql"
    lock_schema = "LOCK TABLE schema_version IN EXCLUSIVE MODE"  # one process migrates at a time

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()

    def _connection(self):
        import psycopg

        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_S)
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Run]:
        import psycopg

        try:
            conn = self._connection()
            tx = conn.transaction()
            tx.__enter__()
        except psycopg.Error as exc:
            self._drop()
            raise _unavailable(exc) from exc
        try:
            yield lambda sql, params=(): _pg_rows(conn, sql, params)
        except BaseException as exc:
            with contextlib.suppress(psycopg.Error):
                tx.__exit__(type(exc), exc, exc.__traceback__)
            if isinstance(exc, psycopg.Error):
                self._drop()
            raise
        else:
            try:
                tx.__exit__(None, None, None)
            except psycopg.Error as exc:
                self._drop()
                raise _unavailable(exc) from exc

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        import psycopg

        try:
            return _pg_rows(self._connection(), sql, params)
        except psycopg.Error as exc:
            self._drop()
            raise _unavailable(exc) from exc

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def _pg_rows(conn, sql: str, params: Sequence[Any]) -> list[tuple]:
    import psycopg

    try:
        cur = conn.execute(sql.replace("?", "%s"), tuple(params))
        return cur.fetchall() if cur.description else []
    except psycopg.Error as exc:
        raise _unavailable(exc) from exc


def _unavailable(exc: BaseException) -> StoreUnavailable:
    """Log the cause (with its traceback) and return the calm error a page shows."""
    if isinstance(exc, StoreUnavailable):
        return exc
    log.warning("class store unavailable: %s: %s", type(exc).__name__, exc, exc_info=exc)
    return StoreUnavailable()
