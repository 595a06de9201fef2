"""The storage readers' database: tests.support.readers_fixture ingested once per package
on the session's backend, and a connection to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from profstore.storage.catalog import find_profile
from profstore.storage.engines import make_engine
from profstore.storage.handles import Connection

from tests.support.perfdb import build_database
from tests.support.readers_fixture import write_readers_fixture


@pytest.fixture(scope="package")
def readers_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("readers")
    return build_database(root, write_readers_fixture(root))


@pytest.fixture
def conn(readers_db: str) -> Iterator[Connection]:
    engine = make_engine(readers_db)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


@pytest.fixture
def v18(conn: Connection) -> int:
    found = find_profile(conn, "v0.18")
    assert found is not None
    return found.id
