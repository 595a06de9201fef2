"""A stand-in for a lookup connection's cursor that keeps the SQL of every execute."""

from __future__ import annotations

from typing import Any


class Recorder:
    """Stands in for the pinned connection's cursor and keeps the SQL of every execute."""

    def __init__(self, cursor: Any, seen: list[str]) -> None:
        self._cursor, self._seen = cursor, seen

    def execute(self, sql: str, *args: object) -> object:
        self._seen.append(sql)
        return self._cursor.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._cursor, name)
