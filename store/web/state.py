"""What the web pages share: the Store on the served file (opened read-only on first use)
and one worker thread for every lookup and figure, so the event loop never blocks and the
Store and matplotlib are never used from two threads at once."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from profstore.api import Store
from profstore.evaluation.plot import RegimeChoice, RegimeFigure, regime_figure

T = TypeVar("T")
FIGURE_CACHE = 32
"""Regime figures kept (a regime page and its image are two requests: draw once)."""


class WebState:
    def __init__(self, path: Path, database: str) -> None:
        self.path, self.database = path, database
        self._store: Store | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="profstore-web")
        self._figures: OrderedDict[tuple[str, str, str, str], RegimeFigure] = OrderedDict()

    def store(self) -> Store:
        """The read-only Store (call from the worker thread only)."""
        if self._store is None:
            self._store = Store.open(self.path, read_only=True)
        return self._store

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(store, *args)`` on the worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: function(self.store(), *args))

    def figure(self, store: Store, version: str, choice: RegimeChoice) -> RegimeFigure:
        """A regime's figure, drawn once and kept for the next request (worker thread)."""
        key = (version, choice.kernel, choice.path, choice.regime_key)
        if key in self._figures:
            self._figures.move_to_end(key)
            return self._figures[key]
        drawn = self._figures[key] = regime_figure(store, version, choice)
        while len(self._figures) > FIGURE_CACHE:
            self._figures.popitem(last=False)
        return drawn

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._store is not None:
            self._store.close()
