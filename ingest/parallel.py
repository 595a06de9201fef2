"""Read and convert a version's files in worker processes while the loader writes.

Ingest is Python CPU (CSV parse, the paths' row regimes, exact keys): on a machine with
two or more cores, forked workers turn whole files into table rows and the loader's
process, the single writer, inserts them file by file in file order. A worker fills a
``RowWriter`` of its own on an in-memory SQLite database with the target's table DDL
(so the writer makes the same layout choices as on the target); its ids start at 1, and
the loader moves them past the ids already written. A file's rows only refer to ids of
that file (see ``ingest.files``), so the stored rows and ids are the ones the
in-process load writes.

Only for SQLite targets with the ``fork`` start method (a worker inherits the imported
modules, so it starts in milliseconds) and inputs large enough to pay for it.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from profstore import schema as t
from profstore.ingest.files import FileCounts, FileJob, gc_paused, write_file
from profstore.ingest.rows_to_sql import COLUMNS, WIDE_POINT_COLUMNS, RowWriter
from profstore.mapping import VersionMapping
from sqlalchemy import Connection, create_engine, func, select

MIN_PARALLEL_BYTES = 2 << 20
"""Below this many bytes of CSV a version loads in-process (two forks and the row
transfer cost more than they save on a few thousand rows)."""
MAX_WORKERS = 3
"""More would wait on the single writer: converting a file costs about twice writing it."""
_PR_SET_PDEATHSIG = 1

Buffers = dict[str, list[tuple]]


def worker_count(conn: Connection, jobs: Sequence[FileJob], requested: int | None) -> int:
    """Workers for this load: ``requested`` when given (0 = in-process), otherwise one
    per usable core (at most ``MAX_WORKERS``) when the target, the platform and the input
    size allow it."""
    if conn.dialect.name != "sqlite" or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    if requested is not None:
        return max(0, requested)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if cores < 2 or sum(len(j.raw) for j in jobs) < MIN_PARALLEL_BYTES:
        return 0
    return min(cores, MAX_WORKERS)


@dataclass(frozen=True)
class _WorkerSetup:
    ddl: tuple[str, ...]
    profile_id: int
    mapping: VersionMapping
    parent: int


_worker: tuple[Connection, _WorkerSetup] | None = None


def _start_worker(setup: _WorkerSetup) -> None:
    """Die with the loader (a killed ingest must not leave workers holding its lock file
    open), and open the in-memory database the worker's writer reads its layout from."""
    global _worker
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != setup.parent:
            os._exit(1)
    gc.freeze()  # the loader's objects, inherited: never walked (nor copied) by the collector
    conn = create_engine("sqlite://").connect()
    for statement in setup.ddl:
        conn.exec_driver_sql(statement)
    _worker = (conn, setup)


def _convert(job: FileJob) -> tuple[Buffers, FileCounts]:
    assert _worker is not None, "the pool's initializer sets the worker up"
    conn, setup = _worker
    writer = RowWriter(conn, setup.profile_id)
    with gc_paused():
        counts = write_file(writer, job, setup.mapping)
    assert not writer.dicts, "a data file adds no mapping rows"
    return writer.buffers, counts


def convert_in_workers(writer: RowWriter, mapping: VersionMapping, jobs: Sequence[FileJob],
                       workers: int) -> Iterator[tuple[FileJob, FileCounts]]:
    """Each job's rows, added to ``writer``'s buffers in job order (ids as the in-process
    load gives them); yields after each job so the caller flushes and reports."""
    ids = _IdShift(writer)
    setup = _WorkerSetup(_table_ddl(writer.conn), writer.profile_id, mapping, os.getpid())
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_worker, initargs=(setup,))
    try:
        futures = [pool.submit(_convert, job) for job in jobs]
        for job, future in zip(jobs, futures):
            buffers, counts = future.result()
            ids.merge(buffers)
            yield job, counts
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _table_ddl(conn: Connection) -> tuple[str, ...]:
    rows = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' "
                                "AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
    return tuple(sql for (sql,) in rows)


class _IdShift:
    """Moves a worker's file-local ids (from 1) to the target's next free ids.

    A column named ``id`` is its table's own id; ``<table>_id`` (other than
    ``profile_id``) refers to that table's id."""

    def __init__(self, writer: RowWriter) -> None:
        self.writer = writer
        self.owners = [name for name, columns in COLUMNS.items() if "id" in columns
                       and (name != t.regime.name or not writer.wide_points)]
        tables = t.metadata.tables
        self.next = {name: (writer.conn.execute(select(func.max(tables[name].c.id)))
                            .scalar() or 0) + 1 for name in self.owners}

    def _positions(self, table: str) -> list[tuple[int, str]]:
        columns = (WIDE_POINT_COLUMNS if table == t.point.name and self.writer.wide_points
                   else COLUMNS[table])
        found = []
        for i, column in enumerate(columns):
            owner = table if column == "id" else column.removesuffix("_id")
            if column != "profile_id" and owner != column and owner in self.next:
                found.append((i, owner))
        return found

    def merge(self, buffers: Buffers) -> None:
        for table, rows in buffers.items():
            shifts = [(i, self.next[owner] - 1) for i, owner in self._positions(table)]
            self.writer.buffers.setdefault(table, []).extend(_shifted(rows, shifts))
        for owner in self.owners:
            self.next[owner] += len(buffers.get(owner, ()))


def _shifted(rows: list[tuple], shifts: list[tuple[int, int]]) -> list[tuple]:
    shifts = [(i, by) for i, by in shifts if by]
    if not shifts:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i, by in shifts:
            values[i] += by
        out.append(tuple(values))
    return out
