"""The real corpus (../shared/perfdb) ingested once per test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.loader import ingest_path
from store.api import Store
from store.db import make_engine, upgrade
from tests.conftest import PERFDB


@pytest.fixture(scope="session")
def perfdb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding every version of the corpus (skips when it is absent)."""
    if not (PERFDB / "ATLAS_800_A3_752T_128G_DIE").is_dir():
        pytest.skip(f"the profiling corpus is not beside the checkout ({PERFDB})")
    db = tmp_path_factory.mktemp("perfdb") / "corpus.db"
    engine = make_engine(db)
    upgrade(engine)
    ingest_path(engine, PERFDB)
    engine.dispose()
    return db


@pytest.fixture(scope="session")
def perfdb_store(perfdb_path: Path) -> Iterator[Store]:
    with Store.open(perfdb_path) as store:
        yield store
