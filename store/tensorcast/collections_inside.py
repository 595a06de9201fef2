"""The interpreter's garbage collections that run while a lookup runs.

A full collection in a TensorCast worker walks the whole heap (torch, the model, the
search) and costs about 0.3 s on a 2-core machine; it starts wherever an allocation
crosses the threshold, sometimes inside a lookup. Its cost is the heap's, not the
lookup's own work, so the run statistics report it beside the lookup time instead of
leaving it to chance how much of it the lookups seem to cost (docs/adr/0119).
"""

from __future__ import annotations

import gc
import os
from time import perf_counter
from typing import Any


class CollectionsInside:
    """Seconds of collections that started while ``running`` was set, in this process."""

    def __init__(self) -> None:
        self.running = False
        self.seconds = 0.0
        self.count = 0
        self._started: float | None = None

    def observe(self, phase: str, info: dict[str, Any]) -> None:
        """A ``gc.callbacks`` entry."""
        if phase == "start":
            self._started = perf_counter() if self.running else None
        elif self._started is not None:
            self.seconds += perf_counter() - self._started
            self.count += 1
            self._started = None


_WATCHERS: dict[int, CollectionsInside] = {}


def watcher() -> CollectionsInside:
    """This process's watcher, registered with ``gc.callbacks`` on first use (a forked
    worker inherits the parent's callback list: it registers its own and drops the
    parent's, whose counts would stay in the parent's copy)."""
    pid = os.getpid()
    found = _WATCHERS.get(pid)
    if found is None:
        for inherited in _WATCHERS.values():
            if inherited.observe in gc.callbacks:
                gc.callbacks.remove(inherited.observe)
        _WATCHERS.clear()
        found = _WATCHERS[pid] = CollectionsInside()
        gc.callbacks.append(found.observe)
    return found
