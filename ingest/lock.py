"""One ingest at a time per database, and a version's state read under the write lock.

SQLite: an advisory ``flock`` on ``<database>.ingest-lock`` (the kernel drops it when the
holder dies, so a killed ingest never leaves a stale lock) whose text names the holder's
pid and start time; each version's transaction then starts with ``BEGIN IMMEDIATE``, so
"unchanged" and the next ids are decided on the committed state, never on a snapshot
another writer is about to replace. PostgreSQL: a session-level advisory lock on a
connection of its own, which turns the server's idle timeouts off for itself (an
``idle_session_timeout`` on the database would otherwise end the idle lock session
mid-ingest and let a second ingest in); the holder's start time is read from
``pg_stat_activity`` when the waiting role may see it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from sqlalchemy import Connection, Engine, text

PG_LOCK_KEY = 0x70726F66  # "prof"
POLL_SECONDS = 0.2
WaitFn = Callable[[str], None]


class IngestBusy(RuntimeError):
    """Another ingest holds the database and the caller asked not to wait."""


@contextmanager
def ingest_lock(engine: Engine, *, wait: bool = True,
                on_wait: WaitFn | None = None) -> Iterator[None]:
    """Hold the database's ingest lock for the block. When another ingest holds it:
    ``on_wait(message)`` once, then wait for it (``wait``) or raise ``IngestBusy``."""
    database = engine.url.database or ""
    if engine.dialect.name == "sqlite":
        if database in ("", ":memory:"):
            yield
            return
        with _file_lock(Path(database), wait, on_wait):
            yield
        return
    with engine.connect() as conn, _pg_lock(conn, wait, on_wait):
        yield


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the write lock from its first statement (SQLite's
    ``BEGIN IMMEDIATE``; PostgreSQL reads committed state per statement already)."""
    with engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield conn


def _busy(holder: str, wait: bool, on_wait: WaitFn | None) -> None:
    message = f"another ingest holds the database since {holder}"
    if not wait:
        raise IngestBusy(message)
    if on_wait is not None:
        on_wait(f"{message}; waiting for it to finish (--no-wait fails at once)")


@contextmanager
def _file_lock(database: Path, wait: bool, on_wait: WaitFn | None) -> Iterator[None]:
    """The lock file exists only while held (removed on release, so a shipped database
    has nothing beside it); a waiter that locked a file already removed tries again."""
    path = database.with_name(database.name + ".ingest-lock")
    told = False
    while True:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held across the yield
        if _try_flock(handle) and _still_linked(handle, path):
            break
        handle.close()
        if not told:
            _busy(_file_holder(path), wait, on_wait)
            told = True
        time.sleep(POLL_SECONDS)
    try:
        handle.truncate(0)
        handle.write(json.dumps({"pid": os.getpid(), "started": _now()}))
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        handle.close()  # closing drops the flock


def _still_linked(handle: IO[str], path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
    except FileNotFoundError:
        return False


def _try_flock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _file_holder(path: Path) -> str:
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        return f"{holder['started']} (pid {holder['pid']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "an unknown time (its lock file names no holder yet)"


def _keep_alive(conn: Connection) -> None:
    """No server timeout may end the lock's session while it idles between statements."""
    if conn.dialect.server_version_info and conn.dialect.server_version_info >= (14,):
        conn.exec_driver_sql("SET idle_session_timeout = 0")
    conn.exec_driver_sql("SET idle_in_transaction_session_timeout = 0")


def _pg_holder(conn: Connection) -> str:
    """Who holds the lock, as far as this role may see (another role's ``backend_start``
    is NULL in ``pg_stat_activity`` without ``pg_read_all_stats``)."""
    row = conn.execute(text(
        "SELECT l.pid, a.backend_start FROM pg_locks l LEFT JOIN pg_stat_activity a "
        "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
        "AND l.objid = :key"), {"key": PG_LOCK_KEY}).first()
    if row is None:
        return "an unknown time"
    if row.backend_start is None:
        return f"an unknown time (server pid {row.pid}, another role's session)"
    return f"{row.backend_start.isoformat(timespec='seconds')} (server pid {row.pid})"


@contextmanager
def _pg_lock(conn: Connection, wait: bool, on_wait: WaitFn | None) -> Iterator[None]:
    key = {"key": PG_LOCK_KEY}
    _keep_alive(conn)
    if not conn.execute(text("SELECT pg_try_advisory_lock(:key)"), key).scalar():
        holder = _pg_holder(conn)
        conn.commit()
        _busy(holder, wait, on_wait)
        conn.execute(text("SELECT pg_advisory_lock(:key)"), key)
    conn.commit()
    try:
        yield
    finally:
        conn.execute(text("SELECT pg_advisory_unlock(:key)"), key)
        conn.commit()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
