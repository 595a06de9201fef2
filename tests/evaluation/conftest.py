"""The small hand-computable fixture databases of the evaluation tests (the ingested corpus,
``perfdb_store``, is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from profstore.api import Store

from tests.support.evaluation import LINEAR, SQUARE, UNVERIFIED, write_rms
from tests.support.perfdb import build_database, build_store
from tests.support.stores import opened_store


@pytest.fixture()
def linear_store(tmp_path: Path) -> Iterator[Store]:
    write_rms(tmp_path / "data", LINEAR)
    with build_store(tmp_path) as store:
        yield store


@pytest.fixture()
def square_db(tmp_path: Path) -> str:
    write_rms(tmp_path / "data", SQUARE, **UNVERIFIED)
    return build_database(tmp_path)


square_store = opened_store("square_db", name="square_store")
