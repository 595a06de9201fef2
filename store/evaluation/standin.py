"""A temporary copy of one version with extra (synthetic) CSV rows ingested into it.

The gap plan's "after" coverage comes from re-running the replay on such a copy: the
version's rows (and its HCCL profile's, so communication answers stay the same) are
copied table by table into a fresh SQLite file (a SQLite database is copied whole by
SQLite's backup instead), and the planned rows go in through the
ingest code itself (``read_kernel_csv`` + ``RowWriter``), as a file of their own per
kernel (``<kernel>.plan.csv``). What the copy answers for a planned point is therefore
what a real collection run with those shapes would make the store answer.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from profstore.api import Store
from profstore.evaluation.holdout import known_profile
from profstore.ingest.csvfile import read_kernel_csv
from profstore.ingest.discover import file_hash
from profstore.ingest.perfdb_writer import Row, csv_text
from profstore.ingest.sql_writer import RowWriter
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import Connection, Engine, Table, insert, select

COPY_ORDER = (t.kernel_file, t.sample_table, t.key_table, t.regime, t.point, t.regime_points,
              t.path_refusal, t.rejected_row, t.comm_sample, t.op_mapping, t.interpolation_policy)
CHUNK = 5000


def copy_profiles(source: Engine, target: Engine, profile_ids: Sequence[int]) -> None:
    """Every row of the given profiles, ids kept, from one database into another."""
    with source.connect() as read, target.begin() as write:
        _copy(read, write, t.profile_set, t.profile_set.c.id.in_(profile_ids))
        for table in COPY_ORDER:
            _copy(read, write, table, table.c.profile_id.in_(profile_ids))


def _copy(read: Connection, write: Connection, table: Table, where: Any) -> None:
    result = read.execution_options(yield_per=CHUNK).execute(
        select(table).where(where).order_by(*table.primary_key.columns))
    for chunk in result.partitions(CHUNK):
        write.execute(insert(table), [dict(row._mapping) for row in chunk])


def add_rows(engine: Engine, profile_id: int, store: Store, version: str,
             rows: Mapping[str, Sequence[Row]]) -> dict[str, int]:
    """Ingest ``rows`` (kernel → CSV rows) into the profile; returns rows accepted per kernel."""
    profile = known_profile(store, version)
    accepted = {}
    with engine.begin() as conn:
        writer = RowWriter(conn, profile_id)
        for kernel, kernel_rows in sorted(rows.items()):
            data = csv_text(kernel_rows).encode()
            readout = read_kernel_csv(data, kernel, profile.mapping.policy(kernel))
            writer.write_kernel_file(f"{kernel}.plan.csv", kernel, file_hash(data), readout,
                                     profile.mapping)
            writer.flush()
            accepted[kernel] = len(readout.accepted)
        writer.write_packs()
    return accepted


def _sqlite_backup(source: Engine, path: Path) -> bool:
    """A SQLite source copied whole with SQLite's online backup, on the source's own
    connection (a consistent snapshot, much faster than row copies); False elsewhere."""
    if source.dialect.name != "sqlite":
        return False
    with source.connect() as conn:
        target = sqlite3.connect(path)
        try:
            conn.connection.dbapi_connection.backup(target)  # type: ignore[union-attr]
        finally:
            target.close()
    return True


@contextmanager
def standin_store(store: Store, version: str, rows: Mapping[str, Sequence[Row]]
                  ) -> Iterator[tuple[Store, dict[str, int]]]:
    """A Store on a temporary copy of ``version`` with ``rows`` added; removed on exit."""
    profile = known_profile(store, version)
    ids = [profile.id] + ([profile.comm_profile_id] if profile.comm_profile_id is not None else [])
    with tempfile.TemporaryDirectory(prefix="profstore-standin-") as folder:
        path = Path(folder) / "standin.db"
        engine = make_engine(f"sqlite:///{path}")
        try:
            if not _sqlite_backup(store.engine, path):
                upgrade(engine)
                copy_profiles(store.engine, engine, ids)
            accepted = add_rows(engine, profile.id, store, version, rows)
        finally:
            engine.dispose()
        copy = Store.open(path, mapping_overlay=store.mapping_overlay)
        try:
            yield copy, accepted
        finally:
            copy.close()
