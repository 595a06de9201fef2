"""One open ``Store`` per database per process, shared by every data source built there.

A throughput search builds a ``ModelRunner`` (and so a data source) for every configuration
it tries, in worker processes; opening the database, reading the version's mapping and
warming the regime caches once per process instead of once per configuration is what
makes a worker's setup cheap. The registry is keyed by process id as well: a forked child
never reuses its parent's connections, it opens its own.
"""

from __future__ import annotations

import os
import threading

from profstore.api import Store

_OPEN: dict[tuple[int, str], Store] = {}
_LOCK = threading.Lock()


def shared_store(db: str) -> Store:
    """The process's store for ``db`` (a SQLite path or a SQLAlchemy URL), opened once."""
    key = (os.getpid(), db)
    with _LOCK:
        store = _OPEN.get(key)
        if store is None:
            store = _OPEN[key] = Store.open(db)
        return store


def close_shared() -> None:
    """Close this process's shared stores (the parent, once its run is over)."""
    pid = os.getpid()
    with _LOCK:
        for key in [k for k in _OPEN if k[0] == pid]:
            _OPEN.pop(key).close()
