"""Opening fixture stores: ``opened_store`` (a fixture factory), so a test module builds
only its data and never repeats the open/close.

A database here is what ``tests.support.perfdb.build_database`` returns: a SQLite file path
or, on ``--backend postgresql``, the URL of a database created for the fixture's scope.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from profstore.api import Store


def opened_store(db_fixture: str, *, scope: str = "function",
                 name: str = "store") -> Callable[..., Iterator[Store]]:
    """A fixture ``name`` (default ``store``) of the given scope: the database the fixture
    ``db_fixture`` returns, opened read-write for that scope. Assign it in
    a module or conftest.py: ``store = opened_store("db", scope="module")``."""

    @pytest.fixture(scope=scope, name=name)
    def _opened(request: pytest.FixtureRequest) -> Iterator[Store]:
        with Store.open(request.getfixturevalue(db_fixture)) as store:
            yield store

    return _opened
