"""Shared test configuration: where the real corpus lives, which backend the databases use,
and the corpus ingested once per session.

``--backend sqlite`` (default) or ``--backend postgresql`` (needs PROFSTORE_TEST_PG_URL,
a database URL whose user may CREATE DATABASE). With PostgreSQL every fixture store is
a fresh database, dropped when the test or fixture scope that created it ends. Markers:

- ``sqlite_only``: the test is about a SQLite file (read-only file mode, paths, PRAGMAs);
  the PostgreSQL pass skips it (the SQLite pass runs it).
- ``no_database``: the test never touches a database (parsers, fuzzing); the PostgreSQL
  pass deselects it rather than run it twice.
- ``postgresql_only``: the test is about a PostgreSQL server; the SQLite pass deselects it.
- ``requires_perfdb``: the test reads ``../shared/perfdb``.

Deselection chooses the pass a test belongs to; it is not a skip. The only skip is
``tests.support.prerequisites.require``, which fails instead when ``CI=true``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support import perfdb
from tests.support.markers import require_corpus
from tests.support.paths import PERFDB
from tests.support.stores import opened_store

PG_URL_ENV = "PROFSTORE_TEST_PG_URL"

settings.register_profile("profstore", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("profstore")
"""Property tests judge answers, not speed: a loaded 2-core machine (CI shares it) must not
turn a slow example into a failure."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend", choices=(perfdb.SQLITE, perfdb.POSTGRESQL), default=perfdb.SQLITE,
        help=f"database backend of the fixture stores (postgresql needs ${PG_URL_ENV})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: a SQLite-file test; deselected on postgresql")
    config.addinivalue_line("markers", "postgresql_only: a PostgreSQL-server test; deselected on "
                                       "sqlite")
    config.addinivalue_line("markers", "bench: a benchmark smoke run; deselected by default, "
                                       "`./dev.sh test` runs it as its own step (-m bench)")
    config.addinivalue_line("markers", "requires_perfdb: reads ../shared/perfdb (a skip outside "
                                       "CI, a failure with CI=true, when it is absent)")
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
    """Each test runs in the pass it belongs to; the others deselect it."""
    other_pass = (("no_database", "sqlite_only") if perfdb.on_postgresql()
                  else ("postgresql_only",))
    kept, deselected = [], []
    for item in items:
        elsewhere = any(item.get_closest_marker(name) for name in other_pass)
        (deselected if elsewhere else kept).append(item)
    config.stash[_PG_ONLY] = [i.nodeid for i in items if i.get_closest_marker("postgresql_only")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


_PG_ONLY = pytest.StashKey[list[str]]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist's controller collects nothing: it takes the PostgreSQL-only test names from
    a worker's output (``pytest_sessionfinish``) for the terminal summary."""
    names = getattr(node, "workeroutput", {}).get("postgresql_only")
    if names is not None:
        node.config.stash[_PG_ONLY] = names


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """Say where the PostgreSQL-only tests went: run on this pass, or left to the other."""
    names = config.stash.get(_PG_ONLY, [])
    if not names:
        return
    files = sorted({n.split("::")[0] for n in names})
    if perfdb.on_postgresql():
        terminalreporter.write_line(f"postgresql_only: {len(names)} tests selected on this "
                                    f"PostgreSQL pass ({', '.join(files)})")
    else:
        terminalreporter.write_line(f"postgresql_only: {len(names)} tests deselected on this "
                                    f"SQLite pass, run them with --backend postgresql "
                                    f"({', '.join(files)})")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_perfdb"):
        require_corpus()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workeroutput"):  # an xdist worker
        session.config.workeroutput["postgresql_only"] = session.config.stash.get(_PG_ONLY, [])
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


@pytest.fixture(scope="session", autouse=True)
def _own_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """$XDG_CACHE_HOME of this test process (and the CLI runs it starts) in its own folder:
    the hold-out error cache (profstore/errors) is never the developer's ~/.cache nor
    another xdist worker's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="session")
def perfdb_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every version of the corpus, ingested once per session (skips when it is absent):
    a SQLite file path or a PostgreSQL URL, as ``Store.open`` and ``--db`` accept."""
    require_corpus()
    return perfdb.build_database(tmp_path_factory.mktemp("perfdb"), PERFDB, stem="corpus")


perfdb_store = opened_store("perfdb_path", scope="session", name="perfdb_store")
"""The session's corpus ingest, opened once for the session (read by every test using it)."""
