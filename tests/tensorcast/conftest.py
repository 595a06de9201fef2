"""The ingested corpus store (``perfdb_store``), from wherever the suite defines it.

tests/conftest.py wins when it defines the fixture (one ingest for the whole suite);
else tests/integration/conftest.py's fixtures are reused here; else this file ingests.
"""

from __future__ import annotations

import pytest

import tests.conftest as shared

if not hasattr(shared, "perfdb_store"):
    try:
        from tests.integration.conftest import perfdb_path, perfdb_store  # noqa: F401
    except ImportError:
        from profstore.api import Store
        from profstore.ingest.loader import ingest_path
        from profstore.storage.engines import make_engine, upgrade

        @pytest.fixture(scope="session")
        def perfdb_store(tmp_path_factory):
            """The corpus ingested once per session into a scratch SQLite file."""
            shared.require_corpus()
            path = tmp_path_factory.mktemp("tensorcast") / "perfdb.db"
            engine = make_engine(path)
            upgrade(engine)
            ingest_path(engine, shared.PERFDB)
            engine.dispose()
            with Store.open(path) as store:
                yield store
