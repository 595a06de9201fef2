"""Migration 0007 (an index on ``sample`` by kernel file and line) on a database built and
filled at revision 0006, on SQLite and on PostgreSQL (this folder runs in both passes): the
index is there after the upgrade and the stored rows' shapes read through it, and the
downgrade removes it and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from profstore.api import Store
from profstore.storage.engines import alembic_config, current_revision
from sqlalchemy import create_engine, inspect

from tests.support.migrations import RMS, add, filled_at, rms, schema_drift


@pytest.fixture()
def url_0006(tmp_path: Path) -> Iterator[str]:
    """A database at revision 0006 holding one version written by 0006's layout."""
    yield filled_at("0006", tmp_path, {
        "RmsNorm": [rms(n, v) for n, v in RMS],
        "Add": [add(4, 2.5), add(8, 3.0)],
    })


def _sample_indexes(url: str) -> dict[str, list[str]]:
    engine = create_engine(url)
    found = {ix["name"]: list(ix["column_names"]) for ix in inspect(engine).get_indexes("sample")}
    engine.dispose()
    return found


def test_0007_indexes_sample_by_file_and_line_and_downgrades_to_0006(url_0006):
    before = _sample_indexes(url_0006)
    assert "ix_sample_file_line" not in before
    command.upgrade(alembic_config(url_0006), "head")
    engine = create_engine(url_0006)
    assert current_revision(engine) == "0007"
    engine.dispose()
    assert _sample_indexes(url_0006) == {**before,
                                         "ix_sample_file_line": ["kernel_file_id", "line_no"]}
    assert schema_drift(url_0006) == []
    with Store.open(url_0006) as store:  # RMS rows: [tokens, 7168] and [7168]; header line 1
        shapes = [store.row_input_shapes("v0.18", "RmsNorm.csv", line) for line in (2, 5, 6)]
        add_row = store.row_input_shapes("v0.18", "Add.csv", 3)
    assert shapes == [((1, 7168), (7168,)), ((8, 7168), (7168,)), None]
    assert add_row == ((8, 64), (8, 64))

    command.downgrade(alembic_config(url_0006), "0006")
    engine = create_engine(url_0006)
    assert current_revision(engine) == "0006"
    engine.dispose()
    assert _sample_indexes(url_0006) == before
