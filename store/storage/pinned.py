"""A lookup's connection to the database, and the ``profile_set`` state it reads.

A ``Pinned`` connection serves one thread's snapshot at a time (store/storage/snapshot.py)
and waits in its engine's idle list between lookups. It keeps one cursor for every
statement of its snapshots: a psycopg cursor per statement was a quarter of the objects a
PostgreSQL lookup allocated.
"""

from __future__ import annotations

import os
from contextlib import suppress
from typing import Any

from profstore.storage import schema as t
from sqlalchemy import Engine, select

Fingerprint = tuple[tuple[int, str, str], ...]
"""Every ``profile_set`` row as (id, alias, content_hash), by id."""


FINGERPRINT_SQL = str(select(t.profile_set.c.id, t.profile_set.c.alias,
                             t.profile_set.c.content_hash).order_by(t.profile_set.c.id))
"""A constant statement without parameters, run on the DBAPI cursor: it is issued once
per uncached lookup, where SQLAlchemy's per-statement overhead would be most of its cost."""


BEGIN_POSTGRESQL = "BEGIN ISOLATION LEVEL REPEATABLE READ"
"""A PostgreSQL lookup's transaction, sent by hand (its connection is in autocommit mode):
with the state's query in one message when that is the first statement
(docs/adr/0124-postgresql-round-trips.md)."""


def _state(cursor: Any, begin: bool = False) -> Fingerprint:
    if begin:  # one simple-protocol message, two results: BEGIN's, then the state
        cursor.execute(f"{BEGIN_POSTGRESQL}; {FINGERPRINT_SQL}")
        cursor.nextset()
    else:
        cursor.execute(FINGERPRINT_SQL)
    return tuple((int(r[0]), str(r[1]), str(r[2])) for r in cursor.fetchall())


class Pinned:
    """A lookup's connection, inside one read transaction from the snapshot's start to its
    end. Between lookups it waits in its SnapshotEngine's idle list (a pool checkout, BEGIN
    through SQLAlchemy and a ROLLBACK per lookup cost more than the lookup's queries), not
    in a thread: a thread between lookups (asleep, waiting on the simulator) holds none, so
    many threads share a few connections (store/storage/engines.py ``POOL_SIZE``).

    SQLite: ``BEGIN`` then ``PRAGMA data_version`` start the read transaction (the pragma
    reads the file header, so it takes the snapshot) and tell whether any other connection
    committed since this one last looked; when none did, the fingerprint read then is still
    the snapshot's. PostgreSQL: the connection is in autocommit mode and ``begin`` only
    notes that a REPEATABLE READ transaction is due; it is sent with the snapshot's first
    statement (in the same message when that statement is the state's), and ended by a
    COMMIT: psycopg forgets its prepared statements at every ROLLBACK
    (docs/adr/0124-postgresql-round-trips.md)."""

    def __init__(self, engine: Engine) -> None:
        conn = engine.connect()
        self.sqlite = conn.dialect.name == "sqlite"
        if not self.sqlite:
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        self.conn = conn
        raw = conn.connection.dbapi_connection
        assert raw is not None, "a checked-out connection has its DBAPI connection"
        self.raw = raw
        self.cursor = raw.cursor()
        """Every statement's, BEGIN to the end: opening one per lookup costs SQLite as much
        as its BEGIN and pragma, and each psycopg cursor is a tree of objects."""
        self._version: int | None = None
        self._fingerprint: Fingerprint | None = None
        self._due = False
        """PostgreSQL: a transaction is begun but not sent yet."""
        self.pid = os.getpid()

    def begin(self) -> None:
        if not self.sqlite:
            self._due = True
            return
        self.cursor.execute("BEGIN")
        rows = self.cursor.execute("PRAGMA data_version").fetchall()  # read to the end
        version = int(rows[0][0])
        if version != self._version:
            self._version, self._fingerprint = version, None

    def opened(self) -> None:
        """Send the due BEGIN before a statement (PostgreSQL)."""
        if self._due:
            self._due = False
            self.cursor.execute(BEGIN_POSTGRESQL)

    def fingerprint(self) -> Fingerprint:
        if not self.sqlite:
            due, self._due = self._due, False
            return _state(self.cursor, begin=due)
        if self._fingerprint is None:
            self._fingerprint = _state(self.cursor)
        return self._fingerprint

    def end(self) -> None:
        """End the transaction, if one was sent (a read: COMMIT and ROLLBACK end it alike)."""
        self._due = False
        if self.sqlite:
            if self.conn.in_transaction():
                self.conn.rollback()
            else:
                self.raw.rollback()
        elif self.conn.in_transaction():
            self.conn.commit()
        else:
            self.raw.commit()

    def close(self, broken: bool = False) -> None:
        """Back to the engine's pool; ``broken``: the pool opens a new one in its place. In a
        forked child nothing is sent on the parent's socket."""
        if self.pid != os.getpid():
            return
        with suppress(Exception):  # a connection already broken has nothing to return
            self.cursor.close()
        with suppress(Exception):
            if broken:
                self.conn.invalidate()
        with suppress(Exception):
            self.conn.close()
