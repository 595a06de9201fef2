"""The bounded map behind every cache of the lookup code that the caller fills under keys
it chooses (ADR 0072): at most ``maxsize`` entries, filled and read at once by the threads
sharing a Store.

A Store holds its ClockCaches as attributes. Built anew for each state of the database
(and by ``Store.clear_cache``): answers (``api.py``, sized by ``cache_size``), regime
slices, kernel presence, regime statistics, miss counts and key sets
(``storage/queries.py``), prepared candidates and the nearest regimes' answers
(``lookup/path_runner.py``), triangulations
(``geometry/simplex.py``), measured formats (``lookup/format_inference.py``),
communication points (``lookup/communication.py``). Kept for the Store's life, keyed by
the version's id (a re-ingest gives it a new one): a file's row input shapes and the
regime policies already checked (``api.py``). Three are module-level memos of JSON text:
``regime_key``'s (``paths/base.py``: its argument, a mapping, is not hashable, and only
regimes of plain values are remembered) and the value lists' of ``storage/regime_pack.py``
(both ways).

The ``functools.lru_cache``s of the lookup code are a different thing: memos of pure
functions of hashable, immutable arguments (shape texts and parsing, profiler dtype names,
a slot's signature parts, a mapping entry's selector, a regime key's parsed fields, the
thread-pool controller). What they return never goes stale, so they live on module
functions, keyed by the arguments, sized once and never cleared. A ClockCache is a map the
caller fills (``get``/``put``) under keys it chooses, so it can belong to one Store and go
with it, keep only some results, and be sized per use; its hit costs one hash of the key
(below), and it is typed at each use (``ClockCache[K, V]``).

Eviction is second chance (CLOCK), an approximation of least-recently-used: a hit only
marks its entry as read; when a ``put`` of a new key finds the map full, the oldest entry
is evicted unless it was read since it was inserted (or since the sweep last passed it),
in which case its mark is cleared and it moves to the newest end. So a hit is one dict
lookup (one hash of the key: a leaf's hash is Python code, and a strict LRU's reordering
hashed it a second time) and a store of the mark. Unlike a strict LRU, an entry read once
outlives an unread one inserted after that read, and the entries a sweep moves keep their
insertion order, not their read order.

Every operation holds the lock, a hit's lookup included (the mark is one store, made
after). A lock-free hit was 0.3-0.6 µs cheaper but unfair: eight threads of warm lookups
that never block kept an ingest in the same process from the interpreter lock, 16 s
instead of 2 s (tests/robustness/test_concurrency.py); contended readers that wait on the
lock leave it to others. ``acquire``/``release`` are bound once (cheaper than ``with``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_VALUE, _READ = 0, 1
"""An entry is a two-item list ``[value, read since the sweep last passed it]``."""


class ClockCache(Generic[K, V]):
    """A thread-safe bounded map with second-chance eviction; ``get`` returns None for a
    missing key. ``maxsize`` 0 keeps nothing."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 0:
            raise ValueError("maxsize must not be negative")
        self.maxsize = maxsize
        self._data: OrderedDict[K, list[Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._acquire, self._release = self._lock.acquire, self._lock.release

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K) -> V | None:
        self._acquire()
        try:
            entry = self._data.get(key)
        finally:
            self._release()
        if entry is None:
            return None
        entry[_READ] = True
        value: V = entry[_VALUE]
        return value

    def put(self, key: K, value: V) -> None:
        """Insert or replace ``key`` as the newest entry; a new key first evicts while the
        map is full (so the entry just put is never the one evicted)."""
        if self.maxsize == 0:
            return
        with self._lock:
            data = self._data
            data.pop(key, None)
            while len(data) >= self.maxsize:
                oldest, entry = data.popitem(last=False)
                if entry[_READ]:
                    entry[_READ] = False
                    data[oldest] = entry
            data[key] = [value, False]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
