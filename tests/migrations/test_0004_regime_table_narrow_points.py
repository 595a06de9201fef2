"""Migration 0004 (regime table; sample_point keeps a regime id, not the regime's columns) on
a database built and filled by revision 0003: every sample_point column reads as before,
the views give the same rows, lookups give the same answers, and the downgrade restores
the 0003 table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic import command
from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.ingest.profiling_folders import Row, mapping_doc, write_version
from profstore.model.leaf import LeafOp
from profstore.storage import schema as t
from profstore.storage.engines import alembic_config, current_revision, make_engine
from sqlalchemy import create_engine, select

from tests.support.migrations import schema_drift, sqlite_url

pytestmark = pytest.mark.sqlite_only

OPS = {"aten.rms_norm.default": {"kernel_type": "RmsNorm"},
       "aten.add.Tensor": {"kernel_type": "Add"}}
RMS = [(1, 10.0), (2, 12.0), (4, 16.0), (8, 24.0)]
"""(tokens, latency): RmsNorm rows [tokens, 7168] BF16; 3 tokens lies between 2 and 4."""


def rms(tokens: int, latency: float) -> Row:
    return Row([[tokens, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[tokens, 7168]], ["DT_BF16"],
               latency=latency)


def add(n: int, latency: float) -> Row:
    return Row([[n, 64], [n, 64]], ["FLOAT", "FLOAT"], [[n, 64]], ["FLOAT"], latency=latency)


def rows_of(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


WIDE = ("id, profile_id, sample_id, kernel_type, path, regime_key, "
        + ", ".join(t.REGIME_COLUMNS)
        + ", semantic_key, axis_0, axis_1, axis_2, latency_us, latency_column")


def leaf(tokens: int) -> LeafOp:
    return LeafOp.from_json({"op": "aten.rms_norm.default", "args": [
        {"shape": [tokens, 7168], "dtype": "bfloat16"}, {"shape": [7168], "dtype": "bfloat16"}],
        "outputs": [{"shape": [tokens, 7168], "dtype": "bfloat16"}]})


@pytest.fixture()
def db_0003(tmp_path: Path) -> Path:
    db = tmp_path / "old.db"
    command.upgrade(alembic_config(sqlite_url(db)), "0003")
    write_version(tmp_path / "perfdb", {"RmsNorm": [rms(n, v) for n, v in RMS],
                                        "Add": [add(4, 2.5), add(4, 3.5), add(8, 3.0)]},
                  mapping_doc(OPS))
    engine = make_engine(db)
    ingest_path(engine, tmp_path / "perfdb")
    engine.dispose()
    return db


def test_0004_moves_regimes_out_of_sample_point_and_back(db_0003):
    db, url = db_0003, sqlite_url(db_0003)
    wide = rows_of(db, f"SELECT {WIDE} FROM sample_point ORDER BY id")
    regimes = rows_of(db, "SELECT * FROM regimes ORDER BY 1, 2, 3, 4")
    duplicates = rows_of(db, "SELECT * FROM duplicates ORDER BY 1, 2, 3, 4, 5")
    assert len(wide) == 7 and len({r[5] for r in wide}) >= 2
    assert [r[-2] for r in wide if r[3] == "RmsNorm"] == [v for _, v in RMS]
    # the two Add rows at n=4: rows_at_coordinate 2, median (2.5 + 3.5) / 2
    assert [(r[8], r[10]) for r in duplicates] == [(2, 3.0)]

    command.upgrade(alembic_config(url), "0004")
    engine = create_engine(url)
    assert current_revision(engine) == "0004"
    with engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(
            select(t.sample_point).order_by(t.sample_point.c.id))] == wide
        assert conn.execute(select(t.regime.c.id)).all() != []
    engine.dispose()
    command.upgrade(alembic_config(url), "head")  # the metadata is the head's (0005 since)
    assert schema_drift(url) == []
    assert rows_of(db, "SELECT * FROM regimes ORDER BY 1, 2, 3, 4") == regimes
    assert rows_of(db, "SELECT * FROM duplicates ORDER BY 1, 2, 3, 4, 5") == duplicates
    assert "regime_id" in {r[1] for r in rows_of(db, "PRAGMA table_info(sample_point)")}
    assert "ep_size" not in {r[1] for r in rows_of(db, "PRAGMA table_info(sample_point)")}
    with Store.open(db) as store:
        after = store.lookup(leaf(3), "v0.18")
    assert (after.latency_us, after.details["method"]) == (14.0, "linear_1d")

    command.downgrade(alembic_config(url), "0003")
    assert rows_of(db, f"SELECT {WIDE} FROM sample_point ORDER BY id") == wide
    assert rows_of(db, "SELECT name FROM sqlite_master WHERE name = 'regime'") == []
    assert rows_of(db, "SELECT * FROM regimes ORDER BY 1, 2, 3, 4") == regimes


def test_a_database_migrated_to_0004_takes_a_new_version_like_a_fresh_one(db_0003, tmp_path):
    command.upgrade(alembic_config(sqlite_url(db_0003)), "head")
    fresh = tmp_path / "fresh.db"
    command.upgrade(alembic_config(sqlite_url(fresh)), "head")
    root = tmp_path / "more"
    write_version(root, {"RmsNorm": [rms(16, 40.0), rms(32, 72.0)]}, mapping_doc(OPS),
                  directory="vllm0.15.0_torch2.9.0_cann8.5")
    for db in (db_0003, fresh):
        engine = make_engine(db)
        ingest_path(engine, root)
        engine.dispose()
    query = ("SELECT g.kernel_type, g.path, g.regime_key, p.axis_0, s.latency_us "
             "FROM sample_point p JOIN regime g ON g.id = p.regime_id "
             "JOIN sample s ON s.id = p.sample_id "  # since 0005 the latency is the sample's
             "WHERE p.profile_id = (SELECT id FROM profile_set WHERE alias = 'v0.15') "
             "ORDER BY p.axis_0")
    assert rows_of(db_0003, query) == rows_of(fresh, query)
    assert [r[-1] for r in rows_of(fresh, query)] == [40.0, 72.0]
