"""Hot statements: built with SQLAlchemy Core once, compiled once per dialect, run on the
DBAPI cursor of a lookup's snapshot.

A point query costs SQLite 4–8 µs; through ``Connection.execute`` it costs 40–60 µs of
statement-cache lookup, parameter processing and result wrapping. The statements here take
only plain values (ints, floats, strings) and return plain tuples, so none of that
processing changes a value. Outside a snapshot (or on an Engine) they run the ordinary way.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Dialect


@dataclass(frozen=True)
class _Compiled:
    sql: str
    defaults: dict[str, Any]
    order: tuple[str, ...] | None
    """Parameter names in placeholder order for a positional paramstyle, else None."""


class Statement:
    """One Core statement and its per-dialect compiled SQL."""

    def __init__(self, stmt: Select) -> None:
        self.stmt = stmt
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()
        _EVERY.append(self)

    def _for(self, dialect: Dialect) -> _Compiled:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            with self._lock:
                done = self.stmt.compile(dialect=dialect)
                order = tuple(done.positiontup) if done.positional and done.positiontup else None
                compiled = _Compiled(done.string, dict(done.params), order)
                self._compiled[dialect.name] = compiled
        return compiled

    def rows(self, engine: Any, **params: Any) -> Sequence[tuple[Any, ...]]:
        """All result rows. ``engine`` is a ``SnapshotEngine`` (its pinned connection's
        cursor inside a snapshot) or anything with ``connect()``."""
        pinned = getattr(engine, "cursor", None)
        cursor = pinned() if callable(pinned) else None
        if cursor is None:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(self.stmt, params).all()]
        compiled = self._for(engine.dialect)
        values = {**compiled.defaults, **params} if compiled.defaults else params
        bound: Any = (tuple(values[n] for n in compiled.order) if compiled.order is not None
                      else values)
        cursor.execute(compiled.sql, bound)
        rows: Sequence[tuple[Any, ...]] = cursor.fetchall()
        return rows


_EVERY: list[Statement] = []
"""Every statement built so far (module-level constants of the lookup modules)."""


def compile_all(dialect: Dialect) -> None:
    """Compile every statement built so far for ``dialect``: a first compile costs about a
    millisecond, which would otherwise land on whichever lookup first needs the statement
    (the slowest lookups of a fresh process were these)."""
    for statement in list(_EVERY):
        statement._for(dialect)
