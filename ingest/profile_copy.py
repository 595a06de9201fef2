"""Writing a version into another database: its rows copied table by table (a SQLite
database copied whole by SQLite's backup instead), and synthetic CSV rows added through
the ingest code itself (``read_kernel_csv`` + ``RowWriter``), one file per kernel
(``<kernel>.plan.csv``). The gap plan's stand-in store is built from these."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from profstore.ingest.csvfile import read_kernel_csv
from profstore.ingest.discover import file_hash
from profstore.ingest.perfdb_writer import Row, csv_text
from profstore.ingest.sql_writer import RowWriter
from profstore.model.mapping import VersionMapping
from profstore.storage import schema as t
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


def add_rows(engine: Engine, profile_id: int, mapping: VersionMapping,
             rows: Mapping[str, Sequence[Row]]) -> dict[str, int]:
    """Ingest ``rows`` (kernel → CSV rows) into the profile, read with the version's
    ``mapping``; returns rows accepted per kernel."""
    accepted = {}
    with engine.begin() as conn:
        writer = RowWriter(conn, profile_id)
        for kernel, kernel_rows in sorted(rows.items()):
            data = csv_text(kernel_rows).encode()
            readout = read_kernel_csv(data, kernel, mapping.policy(kernel))
            writer.write_kernel_file(f"{kernel}.plan.csv", kernel, file_hash(data), readout,
                                     mapping)
            writer.flush()
            accepted[kernel] = len(readout.accepted)
        writer.write_packs()
    return accepted


def sqlite_backup(source: Engine, path: Path) -> bool:
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
