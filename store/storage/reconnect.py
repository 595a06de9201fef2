"""A lookup that meets a lost connection reconnects and runs once more.

A server restart, ``pg_terminate_backend``, ``idle_session_timeout`` or a network blip kills
connections a Store keeps in its pool. The call that meets one sees a driver error
(psycopg's, raw, on the DBAPI fast path; SQLAlchemy's elsewhere). ``retrying`` recognises
it, throws the pool's connections away, waits for the server with a bounded backoff
(``RECONNECT_SECONDS``), and runs the call once more; a server that stays down, or a
second loss, raises ``DatabaseUnavailable``: one profstore error with one line. The same
wait covers a server that refuses connections ("too many clients", "starting up").
See docs/adr/0101-lookup-retry-policy.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from profstore.storage.urls import redact_url
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

RECONNECT_SECONDS = 15.0
"""How long a lookup that lost its connection waits for the server to accept one again
(a ``pg_ctl restart -m fast`` takes one to three seconds)."""
FIRST_BACKOFF_SECONDS = 0.1
MAX_BACKOFF_SECONDS = 2.0
LOST_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57P05", "53300", "53400"})
"""admin_shutdown, crash_shutdown, cannot_connect_now, idle_session_timeout,
too_many_connections, configuration_limit_exceeded (plus every class 08 state)."""
T = TypeVar("T")
log = logging.getLogger("profstore")


class DatabaseUnavailable(ConnectionError):
    """The database server cannot be reached (after one reconnect and a bounded wait)."""


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection (or the attempt to open one) is gone, not that a
    statement failed. SQLite has no connection to lose: never true there."""
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        if exc.orig is None:
            return False
        exc = exc.orig
    module = type(exc).__module__
    if not module.startswith("psycopg"):
        return False
    state = getattr(exc, "sqlstate", None)
    if state:
        return state.startswith("08") or state in LOST_SQLSTATES
    import psycopg

    # no SQLSTATE: the client noticed ("connection failed", "server closed the connection
    # unexpectedly", "the connection is closed", "consuming input failed")
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


def first_line(exc: BaseException) -> str:
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    text = str(cause).strip()
    return text.splitlines()[0] if text else type(cause).__name__


def retrying(engine: Engine, forget: Callable[[], None], call: Callable[[], T]) -> T:
    """``call()``; after a lost connection: ``forget()`` (the caller's pinned state), a
    fresh pool, a bounded wait for the server, and ``call()`` once more."""
    try:
        return call()
    except Exception as exc:
        if not connection_lost(exc):
            raise
        lost = exc
    forget()
    wait_for_server(engine, lost)
    try:
        return call()
    except Exception as exc:
        if not connection_lost(exc):
            raise
        raise unavailable(engine, exc, "again after reconnecting") from None


def wait_for_server(engine: Engine, lost: BaseException, seconds: float | None = None) -> None:
    """Drop the pool's connections (they may all be dead) and try a new one, with an
    exponential backoff, until one answers or ``seconds`` pass (``DatabaseUnavailable``)."""
    seconds = RECONNECT_SECONDS if seconds is None else seconds
    engine.dispose()
    deadline = time.monotonic() + seconds
    delay, last = FIRST_BACKOFF_SECONDS, lost
    log.warning("profstore: lost the database connection (%s); reconnecting", first_line(lost))
    while True:
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1").scalar()
            return
        except Exception as exc:
            if not connection_lost(exc):
                raise
            last = exc
        if time.monotonic() + delay > deadline:
            raise unavailable(engine, last, f"for {seconds:g} s") from None
        time.sleep(delay)
        delay = min(delay * 2, MAX_BACKOFF_SECONDS)


def unavailable(engine: Engine, exc: BaseException, how: str) -> DatabaseUnavailable:
    shown = redact_url(engine.url.render_as_string(hide_password=False))
    return DatabaseUnavailable(f"database {shown} unavailable ({how}): {first_line(exc)}")
