"""Caches that follow a re-ingest: a Store's generations (docs/adr/0041, 0122).

A ``Generation`` holds what the Store's lookups fill (answers, regime slices, kernel
presence, profiles) from one ``profile_set`` state. ``Generations.within`` runs a read in
the current generation: inside its freshness interval without a transaction unless the
read issues a statement (``SnapshotEngine.deferred``), else in a snapshot that reads the
state first and starts a new generation when the state changed.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from profstore.storage.snapshot import Fingerprint, SnapshotEngine, StaleSnapshot

T = TypeVar("T")


@dataclass
class Generation:
    """Caches filled from one ``profile_set`` state; ``parts`` holds the Store's query
    objects (dispatcher, candidate queries, answer cache) built for it. Until the
    ``time.monotonic()`` deadline ``fresh_until`` its caches are read without re-reading
    the state: minus infinity while unbound, infinity when never re-validated, so a warm
    lookup asks one comparison."""

    fingerprint: Fingerprint | None
    parts: Any
    profiles: dict[str, Any] = field(default_factory=dict)
    fresh_until: float = -math.inf


class Generations:
    """The current generation, replaced when the database's versions change."""

    def __init__(self, build: Callable[[], Any], refresh_seconds: float | None) -> None:
        self._build = build
        self.refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self.current = Generation(None, build())

    def fresh(self) -> Generation | None:
        """The current generation while inside its freshness interval (its caches are
        read without a statement), else None."""
        current = self.current
        return current if time.monotonic() < current.fresh_until else None

    def reset(self) -> Generation:
        """Drop every cache (the next lookup re-reads the versions)."""
        with self._lock:
            self.current = Generation(None, self._build())
            return self.current

    def matching(self, seen: Fingerprint) -> Generation:
        """The generation for the state ``seen`` in the caller's snapshot: the current one
        when it matches (or is still unbound), else a new, empty one."""
        with self._lock:
            current = self.current
            if current.fingerprint is None:
                current.fingerprint = seen
            elif current.fingerprint != seen:
                current = self.current = Generation(seen, self._build())
            self._refreshed(current)
            return current

    def within(self, snapshots: SnapshotEngine, read: Callable[[Generation], T]) -> T:
        """``read(generation)`` on the current state. Inside the current generation's
        freshness interval the read begins a transaction only with its first statement
        (reading from the generation's caches needs none: a search's lookups mostly
        don't); that statement reads the state, and a changed state means the read
        starts again, in a snapshot that begins with the state. Without an interval
        (``refresh_seconds`` None: cached answers are never re-validated) every read
        begins with the state, so an uncached answer always sees a re-ingest."""
        current = self.current
        if self.refresh_seconds is not None and time.monotonic() < current.fresh_until:
            try:
                with snapshots.deferred(lambda seen: self._still(current, seen)):
                    return read(current)
            except StaleSnapshot:
                pass
        with snapshots.snapshot():
            return read(self.matching(snapshots.fingerprint()))

    def _still(self, generation: Generation, seen: Fingerprint) -> bool:
        """Whether ``generation`` is still current and filled from the state ``seen``;
        if so its freshness interval starts again."""
        with self._lock:
            if self.current is not generation or generation.fingerprint != seen:
                return False
            self._refreshed(generation)
            return True

    def _refreshed(self, generation: Generation) -> None:
        generation.fresh_until = math.inf if self.refresh_seconds is None else \
            time.monotonic() + self.refresh_seconds
