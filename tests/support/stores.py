"""Opening fixture stores: ``store_on`` (a context helper) and ``opened_store`` (a fixture
factory), so a test module builds only its data and never repeats the open/close.

A database here is what ``tests.support.perfdb.build_database`` returns: a SQLite file path
or, on ``--backend postgresql``, the URL of a database created for the fixture's scope.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from profstore.api import Store


@contextmanager
def store_on(db: str | Path, **options: Any) -> Iterator[Store]:
    """``Store.open(db, **options)``, closed when the block ends."""
    with Store.open(db, **options) as store:
        yield store


def opened_store(db_fixture: str, *, scope: str = "function",
                 name: str = "store") -> Callable[..., Iterator[Store]]:
    """A fixture ``name`` (default ``store``) of the given scope: the database the fixture
    ``db_fixture`` returns, opened read-write for that scope with ``store_on``. Assign it in
    a module or conftest.py: ``store = opened_store("db", scope="module")``."""

    @pytest.fixture(scope=scope, name=name)
    def _opened(request: pytest.FixtureRequest) -> Iterator[Store]:
        with store_on(request.getfixturevalue(db_fixture)) as store:
            yield store

    return _opened
