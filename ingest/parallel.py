"""Read and convert a version's files in worker processes while the loader writes.

Ingest is Python CPU (CSV parse, the paths' row regimes, exact keys): on a machine with
two or more cores, forked workers turn whole files into table rows and the loader's
process, the single writer, inserts them file by file in file order. A worker fills a
``RowWriter`` of its own on an in-memory SQLite database with the target's table DDL
(so the writer makes the same layout choices as on the target); its ids start at 1, and
the loader moves them past the ids already written. A file's rows only refer to ids of
that file (see ``ingest.data_file``), so the stored rows and ids are the ones the
in-process load writes.

Only for SQLite targets with the ``fork`` start method (a worker inherits the imported
modules, so it starts in milliseconds) and inputs large enough to pay for it. One pool
serves a whole ``ingest_path`` call: the next version's files are submitted when the
current version's load begins, so the workers convert it while this one is written and
committed. Workers write profile id 0; the loader sets the version's id.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from profstore.ingest.data_file import FileCounts, FileJob, gc_paused, write_file
from profstore.ingest.discover import MAPPING_FILE
from profstore.ingest.mapping_file import parse_mapping
from profstore.ingest.sql_writer import RowWriter
from profstore.model.mapping import VersionMapping
from profstore.storage import schema as t
from sqlalchemy import Connection, create_engine

MIN_PARALLEL_BYTES = 2 << 20
"""Below this many bytes of CSV a version loads in-process (two forks and the row
transfer cost more than they save on a few thousand rows)."""
MAX_WORKERS = 3
"""More would wait on the single writer: converting a file costs about twice writing it."""
_PR_SET_PDEATHSIG = 1

Buffers = dict[str, list[tuple]]


def worker_count(dialect: str, jobs: Sequence[FileJob], requested: int | None) -> int:
    """Workers for a version's load: ``requested`` when given (0 = in-process), otherwise
    one per usable core (at most ``MAX_WORKERS``) when the target, the platform and the
    input size allow it."""
    if dialect != "sqlite" or "fork" not in multiprocessing.get_all_start_methods():
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
    parent: int


_worker_conn: Connection | None = None


def _start_worker(setup: _WorkerSetup) -> None:
    """Die with the loader (a killed ingest must not leave workers holding its lock file
    open), and open the in-memory database the worker's writers read their layout from."""
    global _worker_conn
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != setup.parent:
            os._exit(1)
    gc.freeze()  # the loader's objects, inherited: never walked (nor copied) by the collector
    conn = create_engine("sqlite://").connect()
    for statement in setup.ddl:
        conn.exec_driver_sql(statement)
    _worker_conn = conn


@lru_cache(maxsize=4)
def _mapping(raw: bytes | None) -> VersionMapping:
    """The version's mapping as the loader parses it (``None``: the version has none)."""
    return parse_mapping({} if raw is None else {MAPPING_FILE: raw}).mapping


def _convert(job: FileJob, mapping_raw: bytes | None) -> tuple[Buffers, FileCounts]:
    assert _worker_conn is not None, "the pool's initializer sets the worker up"
    writer = RowWriter(_worker_conn, 0)
    with gc_paused():
        counts = write_file(writer, job, _mapping(mapping_raw))
    assert not writer.dicts, "a data file adds no mapping rows"
    return writer.buffers, counts


class WorkerPool:
    """The worker processes of one ingest call (started by the first version that uses
    them) and the versions submitted to them, by version directory."""

    def __init__(self, requested: int | None = None) -> None:
        self.requested = requested
        self._pool: ProcessPoolExecutor | None = None
        self._submitted: dict[Path, list[Future]] = {}

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wanted(self, dialect: str, jobs: Sequence[FileJob]) -> bool:
        return worker_count(dialect, jobs, self.requested) > 0

    def submit(self, conn: Connection, key: Path, jobs: Sequence[FileJob],
               mapping_raw: bytes | None) -> None:
        """Start converting a version's jobs (once; ``conn`` is on the target database)."""
        if key in self._submitted:
            return
        if self._pool is None:
            setup = _WorkerSetup(_table_ddl(conn), os.getpid())
            self._pool = ProcessPoolExecutor(
                worker_count(conn.dialect.name, jobs, self.requested),
                mp_context=multiprocessing.get_context("fork"),
                initializer=_start_worker, initargs=(setup,))
        self._submitted[key] = [self._pool.submit(_convert, job, mapping_raw) for job in jobs]

    def convert(self, writer: RowWriter, key: Path, jobs: Sequence[FileJob],
                mapping_raw: bytes | None) -> Iterator[tuple[FileJob, FileCounts]]:
        """Each job's rows added to ``writer``'s buffers in job order, with the ids the
        in-process load gives them; yields after each job (the caller flushes, reports)."""
        self.submit(writer.conn, key, jobs, mapping_raw)
        futures = self._submitted.pop(key)
        try:
            for job, future in zip(jobs, futures, strict=True):
                buffers, counts = future.result()
                _merge(writer, buffers)
                yield job, counts
        finally:
            for future in futures:
                future.cancel()

    def discard(self, key: Path) -> None:
        """Drop a submitted version that is not loaded after all (unchanged, refused)."""
        for future in self._submitted.pop(key, []):
            future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._submitted.clear()


def _table_ddl(conn: Connection) -> tuple[str, ...]:
    rows = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' "
                                "AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
    return tuple(sql for (sql,) in rows)


def _merge(writer: RowWriter, buffers: Buffers) -> None:
    """Add a worker's rows to ``writer``'s buffers, their file-local ids (from 1) moved to
    ids taken from ``writer`` and their profile id 0 to the version's.

    A column named ``id`` is its table's own id; ``<table>_id`` (other than
    ``profile_id``) refers to that table's id."""
    base = {name: writer.reserve_ids(name, len(buffers.get(name, ()))) - 1
            for name in writer.id_tables}
    for table, rows in buffers.items():
        shifts = []
        for i, column in enumerate(writer.columns(t.metadata.tables[table])):
            owner = table if column == "id" else column.removesuffix("_id")
            if column == "profile_id":
                shifts.append((i, writer.profile_id))
            elif owner != column and owner in base:
                shifts.append((i, base[owner]))
        writer.buffers.setdefault(table, []).extend(_shifted(rows, shifts))


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
