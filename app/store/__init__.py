"""The class store: what a room shares (who joined, questions, answers, lessons), in one database every app process
reaches: SQLite (WAL) in ``AP_DATA_DIR`` (default ``data/``), or PostgreSQL when ``AP_DATABASE_URL`` is set.
Plain Python, no ORM: ``db`` the connections, ``migrations`` the schema, ``rooms`` (:class:`Store`), ``lessons``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from app.store.db import Postgres, Sqlite, StoreUnavailable  # noqa: F401 — StoreUnavailable: the API
from app.store.rooms import (  # noqa: F401 — the API
    MAX_SECONDS,
    ROOM_HOURS,
    Ask,
    Question,
    Room,
    RoomError,
    Store,
    normalise_code,
)

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "data"  # without AP_DATA_DIR: data/ in the checkout


def settings(env=None) -> tuple[str | None, Path]:
    """``(AP_DATABASE_URL or None, the data directory)`` read from ``env`` (default: the process environment)."""
    env = os.environ if env is None else env
    url = (env.get("AP_DATABASE_URL") or "").strip() or None
    folder = (env.get("AP_DATA_DIR") or "").strip()
    return url, Path(folder).expanduser() if folder else DEFAULT_DATA_DIR


def open_store(url: str | None = None, data_dir: str | Path | None = None, **kwargs) -> Store:
    """A store on PostgreSQL (``url``) or on ``data_dir/classroom.sqlite3`` (migrated on first use)."""
    db = Postgres(url) if url else Sqlite(Path(data_dir or DEFAULT_DATA_DIR) / "classroom.sqlite3")
    return Store(db, **kwargs)


_stores: dict[tuple, Store] = {}
_lock = threading.Lock()


def get_store() -> Store:
    """This process's store for the current settings (one per setting, made on first use)."""
    key = settings()
    with _lock:
        if key not in _stores:
            _stores[key] = open_store(*key)
        return _stores[key]
