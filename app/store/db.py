"""Connections to the class store: SQLite (WAL, ``synchronous=NORMAL``) or PostgreSQL, behind one small interface.

Constant statements with ``?`` placeholders run on either (``%s`` for psycopg); values always travel as parameters.
Both run in autocommit mode, a write transaction between explicit ``BEGIN`` and ``COMMIT``. Connections are pooled,
one thread at a time each. Any failure to reach the database becomes :class:`StoreUnavailable`, whose message a page
shows; the cause goes to the log. A SQLite file deleted or replaced under a running app is noticed by its identity
(device and inode) when a connection is taken and again when it is handed back: the old file's connections are
closed, and a statement that ran on the old file raises instead of returning, so nothing is acknowledged that the
file on disk does not hold (the store then migrates the new file: ``rooms.Store.ready``).
"""

from __future__ import annotations

import contextlib
import logging
import os
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

    MESSAGE = (
        "The class store cannot be reached right now, so rooms and polls are paused. Your pages still work; "
        "try again in a minute, and if it lasts, tell whoever runs this server."
    )

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class Database:
    """Open connections kept for the next caller (Streamlit runs each rerun in a new thread), each used by one thread
    at a time; a connection that failed is closed instead of kept. A database gives ``_open`` and ``_usable``."""

    begin = "BEGIN"  # starts a write transaction
    mark = "?"  # the driver's placeholder
    lock_schema: str | None = None  # the statement that lets one process at a time migrate (None: ``begin`` does)
    errors: tuple[type[BaseException], ...] = ()  # what the driver raises
    KEEP = 8  # idle connections kept per store

    def __init__(self) -> None:
        self._free: list[Any] = []
        self._lock = threading.Lock()

    def _usable(self, conn: Any) -> bool:
        return True

    def identity(self) -> object:
        """What the data lives in (a SQLite file's device and inode); a new value means a new, empty database."""
        return None

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled (or new) connection for the block, closed instead of kept if the store failed in it."""
        with self._lock:
            conn = self._free.pop() if self._free else None
        if conn is not None and not self._usable(conn):
            _close(conn)
            conn = None
        if conn is None:
            try:
                conn = self._open()
            except self.errors as exc:
                raise _unavailable(exc) from exc
        try:
            yield conn
        except BaseException as exc:
            self._give(conn, broken=isinstance(exc, StoreUnavailable))
            raise
        if not self._usable(conn):  # the database went away while the block ran on it: what it wrote is lost
            self._give(conn, broken=True)
            log.warning("class store: the database changed under a running statement; refused")
            raise StoreUnavailable()
        self._give(conn)

    def _give(self, conn: Any, broken: bool = False) -> None:
        if not broken:
            with self._lock:
                if len(self._free) < self.KEEP:
                    self._free.append(conn)
                    return
        _close(conn)

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """One statement in its own transaction; the rows it returns (none for a write)."""
        with self._connection() as conn:
            return self._rows(conn, sql, params)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Run]:
        """A write transaction through the function it yields: committed at the end, rolled back if it raises."""
        with self._connection() as conn:
            self._rows(conn, self.begin)
            try:
                yield lambda sql, params=(): self._rows(conn, sql, params)
            except BaseException:
                with contextlib.suppress(StoreUnavailable):
                    self._rows(conn, "ROLLBACK")
                raise
            self._rows(conn, "COMMIT")

    def _rows(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        try:
            cur = conn.execute(sql.replace("?", self.mark), tuple(params))
            return cur.fetchall() if cur.description else []
        except self.errors as exc:
            raise _unavailable(exc) from exc


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()


class Sqlite(Database):
    """The embedded default: one file, WAL mode, pooled connections."""

    begin = "BEGIN IMMEDIATE"  # the write lock is taken at once, so read-then-write is safe (and migrating too)
    errors = (OSError, sqlite3.Error)

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)

    def identity(self) -> tuple[int, int] | None:
        """The file's (device, inode), None while there is no file."""
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    def _open(self) -> FileConnection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=BUSY_S, isolation_level=None, check_same_thread=False, factory=FileConnection
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.file = self.identity()
        return conn

    def _usable(self, conn: FileConnection) -> bool:
        """Still on the file at :attr:`path`; if not, every idle connection is on the old file too: all closed (before
        a new one opens the new file beside the old one's WAL)."""
        if conn.file is not None and conn.file == self.identity():
            return True
        log.warning("class store: %s was deleted or replaced; its connections are closed", self.path)
        with self._lock:
            idle, self._free = self._free, []
        for old in idle:
            _close(old)
        return False


class FileConnection(sqlite3.Connection):
    """A SQLite connection that knows the identity of the file it opened (:meth:`Sqlite.identity`)."""

    file: tuple[int, int] | None = None


class Postgres(Database):
    """PostgreSQL through psycopg 3 (``AP_DATABASE_URL``)."""

    mark = "%s"
    lock_schema = "LOCK TABLE schema_version IN EXCLUSIVE MODE"

    def __init__(self, url: str) -> None:
        import psycopg

        super().__init__()
        self.url = url
        self.errors = (psycopg.Error,)

    def _open(self):
        import psycopg

        return psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_S)

    def _usable(self, conn) -> bool:
        return not (conn.closed or conn.broken)


def _unavailable(exc: BaseException) -> StoreUnavailable:
    """Log the cause (with its traceback) and return the calm error a page shows."""
    log.warning("class store unavailable: %s: %s", type(exc).__name__, exc, exc_info=exc)
    return StoreUnavailable()
