"""The one bounded cache of the lookup code (answers, regime slices, prepared candidates,
kernel presence, triangulations): a small LRU map behind a lock, so threads sharing a
Store can fill and read it at once. An ``OrderedDict`` hashes a key twice per hit, which
matters when the key is a leaf descriptor."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class LRU:
    """A thread-safe LRU map; ``get`` returns None for a missing key. ``maxsize`` 0 keeps
    nothing."""

    def __init__(self, maxsize: int) -> None:
        if maxsize < 0:
            raise ValueError("maxsize must not be negative")
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: object) -> None:
        if self.maxsize == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
