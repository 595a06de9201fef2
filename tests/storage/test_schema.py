"""Alembic is the only way the schema is made: the migration equals the metadata, upgrades
are idempotent through the API and the repo's alembic.ini, and read-only opens refuse writes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from profstore.api import Store
from profstore.storage import schema as t
from profstore.storage.engines import (
    alembic_config,
    current_revision,
    head_revision,
    make_engine,
    upgrade,
)
from profstore.storage.urls import normalize_url
from sqlalchemy import create_engine, insert, inspect, select, text
from sqlalchemy.exc import OperationalError

from tests.support.migrations import schema_drift, sqlite_url
from tests.support.paths import REPO
from tests.support.perfdb import new_database

VIEWS = {"regimes", "duplicates"}


def view_names(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='view'")}


@pytest.mark.sqlite_only
def test_command_api_upgrades_an_empty_database_then_is_a_noop_at_head(tmp_path):
    db = tmp_path / "api.db"
    url = sqlite_url(db)
    command.upgrade(alembic_config(url), "head")
    engine = create_engine(url)
    assert current_revision(engine) == head_revision()
    with engine.begin() as conn:
        conn.execute(insert(t.profile_set).values(
            id=1, alias="v0.18", device="D", framework="vllm_ascend", directory="d",
            source_path="/x", content_hash="h", ingested_at="now", files=0, rows_read=0,
            rows_accepted=0, rows_rejected=0))
    command.upgrade(alembic_config(url), "head")
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        assert conn.execute(select(t.profile_set.c.alias)).scalars().all() == ["v0.18"]
    engine.dispose()
    assert schema_drift(url) == []
    assert view_names(db) == VIEWS


def run_alembic_cli(url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"db={url}", "upgrade", "head"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.sqlite_only
def test_repo_alembic_ini_upgrades_an_empty_database_then_is_a_noop(tmp_path):
    db = tmp_path / "cli.db"
    url = sqlite_url(db)
    first = run_alembic_cli(url)
    assert first.returncode == 0, first.stderr
    second = run_alembic_cli(url)
    assert second.returncode == 0, second.stderr
    engine = create_engine(url)
    assert current_revision(engine) == head_revision()
    engine.dispose()
    assert schema_drift(url) == []
    assert view_names(db) == VIEWS


@pytest.mark.sqlite_only
def test_upgrade_helper_creates_every_table_and_index_of_the_metadata(tmp_path):
    engine = make_engine(tmp_path / "helper.db")
    assert upgrade(engine) == head_revision()
    assert upgrade(engine) == head_revision()
    found = inspect(engine)
    assert set(found.get_table_names()) == set(t.metadata.tables) | {"alembic_version"}
    for table in t.metadata.sorted_tables:
        expected = {ix.name for ix in table.indexes}
        assert {ix["name"] for ix in found.get_indexes(table.name)} == expected, table.name
    engine.dispose()


@pytest.mark.sqlite_only
def test_views_answer_queries_on_a_fresh_database(tmp_path):
    engine = make_engine(tmp_path / "views.db")
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM regimes")).scalar() == 0
        assert conn.execute(text("SELECT COUNT(*) FROM duplicates")).scalar() == 0
    engine.dispose()


@pytest.mark.sqlite_only
def test_read_only_store_refuses_writes_and_keeps_the_data(tmp_path):
    db = tmp_path / "ro.db"
    writer = make_engine(db)
    upgrade(writer)
    writer.dispose()
    with Store.open(db) as store:
        with pytest.raises(OperationalError, match="readonly"), store.engine.begin() as conn:
            conn.execute(insert(t.profile_set).values(
                id=1, alias="x", device="D", framework="f", directory="d", source_path="/x",
                content_hash="h", ingested_at="now", files=0, rows_read=0, rows_accepted=0,
                rows_rejected=0))
        with pytest.raises(OperationalError, match="readonly"), store.engine.begin() as conn:
            conn.execute(text("CREATE TABLE intruder (x INTEGER)"))
        assert store.versions() == []
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "intruder" not in tables


@pytest.mark.sqlite_only
def test_read_only_open_of_a_missing_file_does_not_create_it(tmp_path):
    db = tmp_path / "absent.db"
    with pytest.raises(FileNotFoundError, match="no database"):
        Store.open(db)
    assert not db.exists()


@pytest.mark.parametrize("repeat", [1, 2])
def test_the_session_backend_schema_equals_the_metadata(tmp_path, repeat):
    """Runs on PostgreSQL too: the backend's migrated schema, upgraded again, has no drift."""
    url = normalize_url(new_database(tmp_path))
    engine = make_engine(url)
    for _ in range(repeat):
        assert upgrade(engine) == head_revision()
    engine.dispose()
    assert schema_drift(url) == []
    engine = create_engine(url)
    assert set(inspect(engine).get_view_names()) == VIEWS
    engine.dispose()


CHILD_INDEXES = {"sample_key": "ix_sample_key_sample", "sample_point": "ix_sample_point_sample",
                 "path_refusal": "ix_path_refusal_sample"}


def _table_counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {name: conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
                for name in ("sample", "sample_key", "sample_point", "path_refusal")}


def _index_names(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}


@pytest.mark.sqlite_only
def test_0003_indexes_child_sample_ids_of_a_database_built_by_0002(tmp_path):
    from profstore.ingest.loader import ingest_path
    from profstore.ingest.profiling_folders import Row, mapping_doc, write_version

    db = tmp_path / "old.db"
    url = sqlite_url(db)
    command.upgrade(alembic_config(url), "0002")
    rows = [Row([[m, 64]], ["DT_BF16"], [[m, 64]], ["DT_BF16"], latency=float(m))
            for m in (1, 2, 4, 8)]
    write_version(tmp_path / "perfdb", {"RmsNorm": rows},
                  mapping_doc({"aten.rms_norm.default": {"kernel_type": "RmsNorm"}}))
    engine = make_engine(db)
    ingest_path(engine, tmp_path / "perfdb")
    engine.dispose()
    before = _table_counts(db)
    assert before["sample"] == 4
    assert not set(CHILD_INDEXES.values()) & _index_names(db)

    command.upgrade(alembic_config(url), "0003")
    assert set(CHILD_INDEXES.values()) <= _index_names(db)
    assert _table_counts(db) == before
    with sqlite3.connect(db) as conn:
        plan = " ".join(str(r) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM sample_point WHERE sample_id = 1"))
    assert "ix_sample_point_sample" in plan

    command.downgrade(alembic_config(url), "0002")
    assert not set(CHILD_INDEXES.values()) & _index_names(db)
    assert _table_counts(db) == before


@pytest.mark.no_database
@pytest.mark.parametrize("url, expected", [
    ("sqlite:////data/perf.db", Path("/data/perf.db")),
    ("sqlite:///rel/perf.db?mode=ro", Path("rel/perf.db")),
    ("sqlite://", None),
    ("sqlite:///:memory:", None),
    ("postgresql+psycopg://u@h/db", None),
])
def test_sqlite_file_is_the_file_behind_a_sqlite_url(url, expected):
    from profstore.storage.engines import sqlite_file

    assert sqlite_file(url) == expected
