"""The class store: what a room shares (who joined, questions, answers), in one place every app process reaches.

A classroom launch runs several app processes (``scripts/classroom.sh``: one per core behind HAProxy; on
Kubernetes one per pod), and each student's browser is pinned to one of them. A teacher on process 1 and
a student on process 2 share nothing in memory, so a room lives in a database: SQLite in WAL mode in a data
directory by default (no set-up: ``AP_DATA_DIR``, default ``data/`` in the checkout, created on first use),
PostgreSQL when ``AP_DATABASE_URL`` is set (``postgresql://user:password@host/db``, through ``psycopg``).

Plain Python: no Streamlit, no torch, no ORM. Every statement is a constant with parameters; nothing typed by
a user is ever put into SQL text. Pages reach the store through ``app.services`` (``services.class_store``).

- :mod:`app.store.db`: connections (SQLite or PostgreSQL), :class:`StoreUnavailable`.
- :mod:`app.store.migrations`: the numbered schema steps (table ``schema_version``).
- :mod:`app.store.rooms`: rooms, members, questions, answers, rate limits (:class:`Store`, :class:`RoomError`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from app.store.db import StoreUnavailable
from app.store.rooms import ROOM_HOURS, Question, Room, RoomError, Store, normalise_code

ROOT = Path(__file__).resolve().parents[2]

__all__ = [
    "ROOM_HOURS",
    "Question",
    "Room",
    "RoomError",
    "Store",
    "StoreUnavailable",
    "default_data_dir",
    "get_store",
    "normalise_code",
    "open_store",
]


def default_data_dir() -> Path:
    """Where the SQLite file lives when ``AP_DATA_DIR`` is not set: ``data/`` in the checkout."""
    return ROOT / "data"


def settings(env=None) -> tuple[str | None, Path]:
    """``(AP_DATABASE_URL or None, the data directory)`` read from ``env`` (default: the process environment)."""
    env = os.environ if env is None else env
    url = (env.get("AP_DATABASE_URL") or "").strip() or None
    folder = (env.get("AP_DATA_DIR") or "").strip()
    return url, Path(folder).expanduser() if folder else default_data_dir()


def open_store(url: str | None = None, data_dir: str | Path | None = None, **kwargs) -> Store:
    """A store on PostgreSQL (``url``) or on ``data_dir/classroom.sqlite3`` (migrated on first use)."""
    if url:
        from app.store.db import Postgres

        return Store(Postgres(url), **kwargs)
    from app.store.db import Sqlite

    return Store(Sqlite(Path(data_dir or default_data_dir()) / "classroom.sqlite3"), **kwargs)


_stores: dict[tuple, Store] = {}
_lock = threading.Lock()


def get_store() -> Store:
    """This process's store for the current settings (one per setting, made on first use)."""
    key = settings()
    with _lock:
        if key not in _stores:
            _stores[key] = open_store(*key)
        return _stores[key]
