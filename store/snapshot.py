"""One read snapshot per lookup, and caches that follow a re-ingest.

A lookup issues several queries (is the kernel there, exact keys, a regime's points…).
On separate pooled connections, an ingest that commits between two of them could make
one answer from two versions of the data, or look up a profile id the ingest has just
deleted. ``SnapshotEngine`` pins one connection per thread for the whole lookup, inside
one read transaction (``store.db.begin_read_snapshot``), so every query of a lookup sees
the same committed state.

The caches (answers, regime slices, kernel presence, profiles) belong to a
``Generation``: the ``profile_set`` state (every version's id and content hash) they were
filled from. A lookup first reads that state in its snapshot; when it differs from the
generation's, the Store starts a new, empty generation, so no answer is computed from,
or cached next to, data of another ingest. Cached answers are served without a query;
at most every ``refresh_seconds`` the Store re-reads the state (one small query) to
notice a re-ingest even when every answer comes from the cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from profstore import schema as t
from profstore.db import begin_read_snapshot
from sqlalchemy import Connection, Engine, select

Fingerprint = tuple[tuple[int, str, str], ...]
"""Every ``profile_set`` row as (id, alias, content_hash), by id."""


FINGERPRINT_SQL = str(select(t.profile_set.c.id, t.profile_set.c.alias,
                             t.profile_set.c.content_hash).order_by(t.profile_set.c.id))
"""A constant statement without parameters, run on the DBAPI cursor: it is issued once
per uncached lookup, where SQLAlchemy's per-statement overhead would be most of its cost."""


def fingerprint(conn: Connection) -> Fingerprint:
    cursor = conn.connection.cursor()
    try:
        cursor.execute(FINGERPRINT_SQL)
        return tuple((int(r[0]), str(r[1]), str(r[2])) for r in cursor.fetchall())
    finally:
        cursor.close()


class SnapshotEngine:
    """Stands in for the Engine where the query code calls ``engine.connect()``: inside
    ``snapshot()`` the calling thread gets its pinned connection (left open on exit),
    elsewhere an ordinary pooled connection. Other attributes are the Engine's."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._local = threading.local()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        pinned = getattr(self._local, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self.engine.connect() as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """The thread's read snapshot (nested calls share the outer one)."""
        pinned = getattr(self._local, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self.engine.connect() as conn:
            self._local.conn = begin_read_snapshot(conn)
            try:
                yield conn
            finally:
                self._local.conn = None
                conn.rollback()


@dataclass
class Generation:
    """Caches filled from one ``profile_set`` state; ``parts`` holds the Store's query
    objects (dispatcher, candidate queries, answer cache) built for it."""

    fingerprint: Fingerprint | None
    parts: Any
    profiles: dict[str, Any] = field(default_factory=dict)
    checked_at: float = field(default_factory=time.monotonic)


class Generations:
    """The current generation, replaced when the database's versions change."""

    def __init__(self, build: Callable[[], Any], refresh_seconds: float | None) -> None:
        self._build = build
        self.refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self.current = Generation(None, build())

    def reset(self) -> Generation:
        """Drop every cache (the next lookup re-reads the versions)."""
        with self._lock:
            self.current = Generation(None, self._build())
            return self.current

    def due(self) -> bool:
        """Whether cached answers should be re-validated before being served."""
        if self.current.fingerprint is None:
            return True
        if self.refresh_seconds is None:
            return False
        return time.monotonic() - self.current.checked_at >= self.refresh_seconds

    def matching(self, seen: Fingerprint) -> Generation:
        """The generation for the state ``seen`` in the caller's snapshot: the current one
        when it matches (or is still unbound), else a new, empty one."""
        with self._lock:
            current = self.current
            if current.fingerprint is None:
                current.fingerprint = seen
            elif current.fingerprint != seen:
                current = self.current = Generation(seen, self._build())
            current.checked_at = time.monotonic()
            return current
