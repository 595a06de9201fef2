"""Shared test configuration: where the real corpus lives, which backend the databases use,
and the corpus ingested once per session.

``--backend sqlite`` (default) or ``--backend postgresql`` (needs PROFSTORE_TEST_PG_URL,
a database URL whose user may CREATE DATABASE). With PostgreSQL every fixture store is
a fresh database, dropped when the test or fixture scope that created it ends. Markers:

- ``sqlite_only``: the test is about a SQLite file (read-only file mode, paths, PRAGMAs);
  the PostgreSQL pass skips it (the SQLite pass runs it).
- ``no_database``: the test never touches a database (parsers, fuzzing); the PostgreSQL
  pass deselects it rather than run it twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from profstore.api import Store

from tests.support import perfdb

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
PERFDB = SHARED / "perfdb"
WORKLOADS = SHARED / "workloads"
PG_URL_ENV = "PROFSTORE_TEST_PG_URL"

requires_perfdb = pytest.mark.skipif(
    not (PERFDB / "ATLAS_800_A3_752T_128G_DIE").is_dir(),
    reason=f"the profiling corpus is not beside the checkout ({PERFDB})",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend", choices=(perfdb.SQLITE, perfdb.POSTGRESQL), default=perfdb.SQLITE,
        help=f"database backend of the fixture stores (postgresql needs ${PG_URL_ENV})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: a SQLite-file test; skipped on postgresql")
    config.addinivalue_line("markers", "no_database: never opens a database; "
                                       "deselected on postgresql")
    backend = config.getoption("--backend")
    if backend == perfdb.POSTGRESQL and not os.environ.get(PG_URL_ENV):
        raise pytest.UsageError(
            f"--backend postgresql needs {PG_URL_ENV}=postgresql+psycopg://user@host:port/db "
            "(a user allowed to CREATE DATABASE; .ci/postgres.sh starts one)")
    perfdb.use_backend(backend, os.environ.get(PG_URL_ENV))
    if backend == perfdb.POSTGRESQL:
        problem = perfdb.server_problem()
        if problem:
            raise pytest.UsageError(f"--backend postgresql: {problem}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not perfdb.on_postgresql():
        return
    skip = pytest.mark.skip(reason="SQLite-file test: runs in the SQLite pass")
    kept, deselected = [], []
    for item in items:
        (deselected if item.get_closest_marker("no_database") else kept).append(item)
        if item.get_closest_marker("sqlite_only"):
            item.add_marker(skip)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_sessionfinish(session: pytest.Session) -> None:
    if perfdb.on_postgresql():
        perfdb.drop_all()


@pytest.fixture(autouse=True)
def _drop_test_databases() -> Iterator[None]:
    """On PostgreSQL, drop the databases a test created (wider-scoped fixtures' databases
    were created before this runs and live until the session ends)."""
    before = len(perfdb.BACKEND.created)
    yield
    if perfdb.on_postgresql():
        perfdb.drop_databases(perfdb.BACKEND.created[before:])


@pytest.fixture(scope="session")
def perfdb_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every version of the corpus, ingested once per session (skips when it is absent):
    a SQLite file path or a PostgreSQL URL, as ``Store.open`` and ``--db`` accept."""
    if not (PERFDB / "ATLAS_800_A3_752T_128G_DIE").is_dir():
        pytest.skip(f"the profiling corpus is not beside the checkout ({PERFDB})")
    return perfdb.build_database(tmp_path_factory.mktemp("perfdb"), PERFDB, stem="corpus")


@pytest.fixture(scope="session")
def perfdb_store(perfdb_path: str) -> Iterator[Store]:
    with Store.open(perfdb_path) as store:
        yield store
