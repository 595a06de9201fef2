"""Worker-process ingest (ingest/parallel.py) stores exactly what the in-process load stores.

The parallel load is SQLite-only, so these tests use SQLite files whatever the backend.
A version of real v0.18 kernels (every capability path, rejected rows, a case conflict and
an entry that cannot be opened) is ingested after another version, so its ids must start
past the ids already stored.
"""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest
from alembic import command
from profstore.ingest import parallel
from profstore.ingest.loader import ingest_path
from profstore.storage.engines import alembic_config, make_engine, upgrade

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB

pytestmark = requires_perfdb

DEVICE = "ATLAS_800_A3_752T_128G_DIE"
V13 = PERFDB / DEVICE / "vllm_ascend" / "vllm0.13.0_torch2.8.0_cann8.3"
V18 = PERFDB / DEVICE / "vllm_ascend" / "vllm0.18.0_torch2.9.0_cann8.5"
KERNELS = ("FusedInferAttentionScore", "GroupedMatmulSwigluQuant", "PadV3", "DynamicQuant",
           "TransposeBatchMatMul", "LightningIndexer", "Add", "MoeGatingTopK",
           "ScatterNdUpdate", "AscendQuantV2")
"""Attention, MoE, quantised and plain MatMul, compute-scale, elementwise, scatter and
generic rows; PadV3, GroupedMatmulSwigluQuant and TransposeBatchMatMul have rejected rows."""


def corpus_root(tmp_path: Path) -> Path:
    root = tmp_path / "root" / DEVICE / "vllm_ascend"
    shutil.copytree(V13, root / V13.name)
    version = root / V18.name
    version.mkdir()
    shutil.copy(V18 / "op_mapping.yaml", version)
    for kernel in KERNELS:
        shutil.copy(V18 / f"{kernel}.csv", version)
    shutil.copy(V18 / "Add.csv", version / "ADD.csv")  # differs from Add.csv only by case
    (version / "Gone.csv").symlink_to(version / "missing.csv")  # refused: dangling link
    return tmp_path / "root"


def stored(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows in insertion (rowid) order, or primary-key order for a table
    without rowid; the ingest time aside."""
    with sqlite3.connect(path) as conn:
        tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                              "AND name NOT LIKE 'sqlite_%'").fetchall()
        found = {}
        for table, sql in tables:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")
                       if c[1] != "ingested_at"]
            order = "" if "WITHOUT ROWID" in sql.upper() else " ORDER BY rowid"
            found[table] = conn.execute(
                f"SELECT {', '.join(columns)} FROM {table}{order}").fetchall()
    return found


def ingest(root: Path, db: Path, workers: int, revision: str | None = None) -> list[str]:
    """Summary lines (timings cut) of an ingest into ``db``, created at ``revision`` (head
    by default; an older database is written in its own layout)."""
    if revision is not None and not db.exists():
        command.upgrade(alembic_config(f"sqlite:///{db}"), revision)
    engine = make_engine(str(db))
    if revision is None:
        upgrade(engine)
    try:
        return [s.line().rsplit(" in ", 1)[0] for s in ingest_path(engine, root,
                                                                   workers=workers)]
    finally:
        engine.dispose()


@pytest.mark.parametrize("revision", [None, "0004"])
def test_workers_store_the_rows_and_ids_of_the_in_process_load(tmp_path: Path,
                                                               revision: str | None) -> None:
    root = corpus_root(tmp_path)
    lines_in_process = ingest(root, tmp_path / "a.db", workers=0, revision=revision)
    lines_parallel = ingest(root, tmp_path / "b.db", workers=2, revision=revision)
    assert lines_parallel == lines_in_process
    a, b = stored(tmp_path / "a.db"), stored(tmp_path / "b.db")
    assert {table: len(rows) for table, rows in b.items()} == \
        {table: len(rows) for table, rows in a.items()}
    for table in a:
        assert b[table] == a[table], table
    # v0.18's files come after v0.13's: its kernel_file ids continue v0.13's, one per
    # CSV in name order, then the refused entry
    v13_files = len(list(V13.glob("*.csv")))
    v18_names = sorted([f"{k}.csv" for k in KERNELS] + ["ADD.csv"]) + ["Gone.csv"]
    with sqlite3.connect(tmp_path / "b.db") as conn:
        rows = conn.execute("SELECT id, file_name FROM kernel_file WHERE profile_id = 2 "
                            "ORDER BY id").fetchall()
        assert rows == [(v13_files + i, name) for i, name in enumerate(v18_names, start=1)]
        (first_sample,), = conn.execute("SELECT min(id) FROM sample WHERE profile_id = 2")
        v13_rows = sum(len([x for x in p.read_text().splitlines() if x.strip()]) - 1
                       for p in V13.glob("*.csv"))
        assert first_sample == v13_rows + 1
    again = ingest(root, tmp_path / "b.db", workers=2, revision=revision)
    assert [line.split(": ", 1)[1] for line in again] == [
        f"unchanged ({V13.name}), skipped", f"unchanged ({V18.name}), skipped"]
    assert stored(tmp_path / "b.db") == b
    assert multiprocessing.active_children() == []


def test_a_failing_worker_leaves_nothing_of_the_version(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = corpus_root(tmp_path)
    convert = parallel.write_file

    def failing(writer, job, mapping):  # runs in the forked workers
        if job.name == "LightningIndexer.csv":
            raise RuntimeError("worker failed on LightningIndexer.csv")
        return convert(writer, job, mapping)

    monkeypatch.setattr(parallel, "write_file", failing)
    db = tmp_path / "c.db"
    with pytest.raises(RuntimeError, match="worker failed on LightningIndexer.csv"):
        ingest(root, db, workers=2)
    assert multiprocessing.active_children() == []
    tables = stored(db)
    assert [row[1] for row in tables["profile_set"]] == ["v0.13"]
    assert {row[1] for row in tables["kernel_file"]} == {1}
    assert not db.with_name(db.name + ".ingest-lock").exists()
