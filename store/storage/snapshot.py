"""One read snapshot per lookup, and caches that follow a re-ingest.

A lookup issues several queries (is the kernel there, exact keys, a regime's points…).
On separate pooled connections, an ingest that commits between two of them could make
one answer from two versions of the data, or look up a profile id the ingest has just
deleted. ``SnapshotEngine`` pins one connection to the thread for the whole lookup,
inside one read transaction, so every query of a lookup sees the same committed state;
the connection goes back to the Store's idle list when the lookup ends. A forked child never reuses
the parent's connections (``_reset_after_fork``).

The caches (answers, regime slices, kernel presence, profiles) belong to a
``Generation``: the ``profile_set`` state (every version's id and content hash) they were
filled from. A lookup first reads that state in its snapshot; when it differs from the
generation's, the Store starts a new, empty generation, so no answer is computed from,
or cached next to, data of another ingest. Cached answers are served without a query;
at most every ``refresh_seconds`` the Store re-reads the state (one small query) to
notice a re-ingest even when every answer comes from the cache.

Inside that interval an uncached lookup starts no transaction of its own
(``SnapshotEngine.deferred``): most lookups of a search are answered from cached regimes
and need no statement. The first statement such a lookup issues begins the transaction
and reads the state; a state other than the generation's raises ``StaleSnapshot``, and
the lookup starts again in a snapshot of its own (``profstore.storage.generations``).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from profstore.storage.engines import POOL_OVERFLOW, POOL_SIZE, POOL_TIMEOUT_SECONDS
from profstore.storage.pinned import Fingerprint, Pinned
from sqlalchemy import Connection, Engine
from sqlalchemy.engine import Dialect

__all__ = ["Fingerprint", "SnapshotEngine", "StaleSnapshot"]


class StaleSnapshot(Exception):
    """A deferred snapshot began on a state other than the one its caller's caches were
    filled from: the caller answers again in a snapshot of its own."""

_EVERY_ENGINE: weakref.WeakSet[SnapshotEngine] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for engine in list(_EVERY_ENGINE):
        engine._after_fork()


os.register_at_fork(after_in_child=_reset_after_fork)


class _Local(threading.local):
    pinned: Pinned | None = None
    active: bool = False
    deferred: _Snapshot | None = None
    """A deferred snapshot not begun yet: the thread's first statement begins it."""


LOOKUP_CONNECTIONS = POOL_SIZE + POOL_OVERFLOW - 1
"""Most connections a Store's lookups hold at once (one pool slot stays free for the
calls outside a snapshot); a lookup past that waits for one to come back."""


class SnapshotEngine:
    """Stands in for the Engine where the query code calls ``engine.connect()``: inside
    ``snapshot()`` the calling thread gets a lookup connection (from the idle list, or a
    new one from the pool; back to the idle list on exit), elsewhere an ordinary pooled
    connection. It is not an Engine: the query code asks only for ``connect()``
    (``candidates.Connectable``), ``cursor()`` and the snapshot calls."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._local = _Local()
        self._all: weakref.WeakSet[Pinned] = weakref.WeakSet()
        self._idle: list[Pinned] = []
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)
        self._opening = 0
        """Connections being opened (outside the lock), counted against the limit."""
        _EVERY_ENGINE.add(self)

    @property
    def dialect(self) -> Dialect:
        """The engine's dialect (hot statements are compiled for it once)."""
        return self.engine.dialect

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        local = self._local
        if local.deferred is not None:
            local.deferred.begin()
        if local.active and local.pinned is not None:
            local.pinned.opened()
            yield local.pinned.conn
            return
        with self.engine.connect() as conn:
            yield conn

    def cursor(self) -> Any:
        """The pinned connection's cursor inside a snapshot (its transaction sent), else
        None (use ``connect``)."""
        local = self._local
        if local.deferred is not None:
            local.deferred.begin()
        pinned = local.pinned
        if not local.active or pinned is None:
            return None
        pinned.opened()
        return pinned.cursor

    def fingerprint(self) -> Fingerprint:
        """The ``profile_set`` state in the calling thread's snapshot."""
        pinned = self._local.pinned
        if pinned is None or not self._local.active:
            raise RuntimeError("fingerprint() outside a snapshot")
        return pinned.fingerprint()

    def snapshot(self) -> _Snapshot:
        """The thread's read snapshot (nested calls share the outer one)."""
        return _Snapshot(self)

    def lone(self) -> _Snapshot:
        """A lookup connection for one statement, outside a transaction: a lone statement
        reads one committed state by itself, so it needs no BEGIN or end (on PostgreSQL
        one round trip instead of three). Inside a snapshot, that snapshot's."""
        return _Snapshot(self, transaction=False)

    def deferred(self, expected: Callable[[Fingerprint], bool]) -> _Snapshot:
        """A read snapshot begun by the thread's first statement inside it, if any; then
        ``expected(state)`` tells whether the state it reads is the caller's, and
        ``StaleSnapshot`` is raised if not. Without a statement no transaction is begun:
        the caller answers from what it has cached."""
        return _Snapshot(self, expected)

    def _drop(self, pinned: Pinned, broken: bool = True) -> None:
        """Give up a lookup's connection (``broken``: it failed; the pool replaces it)."""
        pinned.close(broken)
        self._local.active = False
        if self._local.pinned is pinned:
            self._local.pinned = None
        with self._returned:
            self._all.discard(pinned)
            self._returned.notify()

    def forget(self) -> None:
        """After a lost connection: the calling thread's connection and every idle one
        (as likely dead) are given up; the next lookups open new ones."""
        pinned = self._local.pinned
        if pinned is not None:
            self._drop(pinned)
        self._local.active = False
        with self._lock:
            idle, self._idle = self._idle, []
        for p in idle:
            self._drop(p)

    def close(self) -> None:
        """Return every lookup connection (before the engine is disposed)."""
        with self._lock:
            pinned, self._all, self._idle = list(self._all), weakref.WeakSet(), []
        for p in pinned:
            p.close()
        self._local.pinned = None
        self._local.active = False

    def _checkout(self) -> Pinned:
        """An idle lookup connection, a new one while fewer than ``LOOKUP_CONNECTIONS``
        exist, else the next one returned (``POOL_TIMEOUT_SECONDS`` at most)."""
        with self._returned:
            if not self._idle and not self._room():
                self._returned.wait_for(lambda: bool(self._idle) or self._room(),
                                        timeout=POOL_TIMEOUT_SECONDS)
            if self._idle:
                return self._idle.pop()
            if not self._room():
                raise TimeoutError(f"no lookup connection came back within "
                                   f"{POOL_TIMEOUT_SECONDS} s ({LOOKUP_CONNECTIONS} in use)")
            self._opening += 1
        try:
            pinned = Pinned(self.engine)
        finally:
            with self._returned:
                self._opening -= 1
                self._returned.notify()
        with self._returned:
            self._all.add(pinned)
        return pinned

    def _room(self) -> bool:
        return len(self._all) + self._opening < LOOKUP_CONNECTIONS

    def _checkin(self, pinned: Pinned) -> None:
        with self._returned:
            self._idle.append(pinned)
            self._returned.notify()

    def _after_fork(self) -> None:
        """In a forked child: forget the parent's connections without touching them (a
        ROLLBACK or a close on the shared socket desynchronises the parent's session)."""
        self._local = _Local()
        self._all = weakref.WeakSet()
        self._idle = []
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)
        self._opening = 0
        self.engine.dispose(close=False)


class _Snapshot:
    """``SnapshotEngine.snapshot()``'s context: a class, not a generator, because every
    lookup that queries enters one (a ``@contextmanager`` costs twice the Python work).
    The outermost entry of a thread begins the read transaction and its exit ends it; a
    nested entry shares the outer one and leaves it open. A deferred entry
    (``SnapshotEngine.deferred``) begins it on the thread's first statement instead."""

    __slots__ = ("_engine", "_expected", "_pinned", "_transaction")

    def __init__(self, engine: SnapshotEngine,
                 expected: Callable[[Fingerprint], bool] | None = None,
                 transaction: bool = True) -> None:
        self._engine = engine
        self._expected = expected
        self._transaction = transaction
        self._pinned: Pinned | None = None
        """Set while this entry is the outermost one (its exit ends the transaction)."""

    def __enter__(self) -> None:
        local = self._engine._local
        if local.deferred is not None:  # nested in a deferred one: begin it and share it
            local.deferred.begin()
        if local.active and local.pinned is not None:
            return
        if self._expected is not None:
            local.deferred = self
            return
        self._start()

    def begin(self) -> None:
        """A deferred entry's transaction, begun now; ``StaleSnapshot`` when it reads
        another state than expected."""
        self._engine._local.deferred = None
        pinned = self._start()
        assert self._expected is not None, "only a deferred entry begins late"
        if not self._expected(pinned.fingerprint()):
            raise StaleSnapshot("the database's versions changed")

    def _start(self) -> Pinned:
        engine = self._engine
        local = engine._local
        pinned = local.pinned = engine._checkout()
        try:
            if self._transaction:
                pinned.begin()
        except Exception:
            engine._drop(pinned)
            raise
        local.active = True
        self._pinned = pinned
        return pinned

    def __exit__(self, *exc: object) -> None:
        engine = self._engine
        if engine._local.deferred is self:
            engine._local.deferred = None
        pinned = self._pinned
        if pinned is None:
            return
        self._pinned = None
        engine._local.active = False
        try:
            pinned.end()
        except Exception:  # a broken connection: the pool opens a new one
            engine._drop(pinned)
            return
        engine._local.pinned = None
        engine._checkin(pinned)
