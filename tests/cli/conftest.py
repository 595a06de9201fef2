"""Databases for the CLI tests: the small hand-computable fixture
(tests.support.cli_fixture) ingested once, and the real corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_fixture import write_fixture
from tests.support.perfdb import build_database


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-data")
    write_fixture(root)
    return root


@pytest.fixture(scope="session")
def fixture_db(tmp_path_factory: pytest.TempPathFactory, fixture_root: Path) -> str:
    """The fixture version ingested (on the session's backend); CLI tests only read it."""
    return build_database(tmp_path_factory.mktemp("cli-db"), fixture_root, stem="fixture")


@pytest.fixture(scope="session")
def corpus_db(perfdb_path: str) -> str:
    """The real corpus: the suite's one session ingest (tests/conftest.py's perfdb_path);
    these tests query its v0.18."""
    return str(perfdb_path)
