"""Load version directories into the database: idempotent, one transaction per version."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from profstore.ingest.data_file import FileCounts, gc_paused, write_file
from profstore.ingest.discover import (
    MAPPING_FILE,
    VersionSource,
    survey,
)
from profstore.ingest.lock import WaitFn, ingest_lock, write_transaction
from profstore.ingest.mapping_file import EMPTY_MAPPING, MappingOutcome
from profstore.ingest.parallel import WorkerPool
from profstore.ingest.read_ahead import ReadAhead, VersionRead
from profstore.ingest.sql_writer import RowWriter
from profstore.model.mapping import VersionMapping
from profstore.storage import schema as t
from profstore.storage.engines import bulk_load_settings, upgrade
from sqlalchemy import Connection, Engine, delete, func, insert, select

ProgressFn = Callable[[str, int, int], None]
"""progress(label, files_done, files_total)."""
ALLOW_FLAG = "--allow-missing-mapping"


class MappingRefused(ValueError):
    """The version's op_mapping.yaml cannot be used and the caller did not allow that."""


@dataclass
class VersionSummary:
    alias: str
    directory: str
    status: str
    files: int = 0
    rows_read: int = 0
    rows_accepted: int = 0
    rows_rejected: int = 0
    reasons: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    refused_files: list[str] = field(default_factory=list)
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def line(self) -> str:
        if self.status in ("unchanged", "failed", "empty", "repeat"):
            return f"{self.alias}: {self.message}"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.reasons.items())) or "none"
        refused = (f"; refused files: {'; '.join(self.refused_files)}"
                   if self.refused_files else "")
        return (
            f"{self.alias}: {self.files} files, {self.rows_read} rows read, "
            f"{self.rows_accepted} accepted, {self.rows_rejected} rejected ({reasons}) "
            f"in {self.seconds:.2f}s{refused}"
        )


def ingest_path(
    engine: Engine,
    path: str | Path,
    *,
    progress: ProgressFn | None = None,
    row_hook: Callable[[int], None] | None = None,
    allow_missing_mapping: bool = False,
    wait: bool = True,
    on_wait: WaitFn | None = None,
    workers: int | None = None,
    upgrade_schema: bool = False,
) -> list[VersionSummary]:
    """Ingest every version under ``path``, holding the database's ingest lock (another
    ingest running: ``on_wait(message)``, then wait, or ``IngestBusy`` when not ``wait``).
    A version that cannot be ingested gets a ``failed`` summary and the others go on.
    ``row_hook(n)`` is called after each file with the running row count (tests inject
    failures through it). ``workers``: processes that read and convert files while this
    one writes (0: all in this process; None: chosen by ``ingest.parallel.worker_count``).
    ``upgrade_schema``: bring the schema to head first, under the lock."""
    found = survey(Path(path))
    summaries = [_note(p, "empty", f"empty version directory {p}: no CSV files, nothing "
                       "ingested") for p in found.empty]
    summaries += [_note(p, "repeat", f"{p} is {same} reached again through a symlink; "
                        "ingested once") for p, same in found.repeats]
    with ingest_lock(engine, wait=wait, on_wait=on_wait), WorkerPool(workers) as pool:
        if upgrade_schema:  # under the lock: a second ingest waits instead of migrating too
            upgrade(engine)
        ahead = ReadAhead(pool, allow_missing_mapping)
        for i, source in enumerate(found.sources):
            ahead.following = found.sources[i + 1] if i + 1 < len(found.sources) else None
            try:
                summaries.append(ingest_version(
                    engine, source, progress=progress, row_hook=row_hook,
                    allow_missing_mapping=allow_missing_mapping, ahead=ahead))
            except ValueError as exc:  # an alias collision, a refused mapping
                summaries.append(VersionSummary(source.short_alias, source.directory,
                                                "failed", message=f"not ingested: {exc}"))
    return summaries


def _note(path: Path, status: str, message: str) -> VersionSummary:
    return VersionSummary(f"{path.parent.parent.name}/{path.name}", path.name, status,
                          message=message)


def ingest_version(
    engine: Engine,
    source: VersionSource,
    *,
    progress: ProgressFn | None = None,
    row_hook: Callable[[int], None] | None = None,
    allow_missing_mapping: bool = False,
    workers: int | None = None,
    ahead: ReadAhead | None = None,
) -> VersionSummary:
    """Ingest one version in one transaction. ``ahead``: the ingest call's read-ahead and
    worker pool (without it, a pool of ``workers`` for this version alone)."""
    started = time.perf_counter()
    with ExitStack() as stack:
        if ahead is None:
            ahead = ReadAhead(stack.enter_context(WorkerPool(workers)), allow_missing_mapping)
        try:
            summary = _ingest_read(engine, source, ahead.take(source), ahead, progress,
                                   row_hook, allow_missing_mapping)
        finally:
            ahead.pool.discard(source.path)  # submitted but not loaded (unchanged, failed)
    if summary.status == "ingested":
        summary.seconds = time.perf_counter() - started
    return summary


def _ingest_read(engine: Engine, source: VersionSource, read: VersionRead, ahead: ReadAhead,
                 progress: ProgressFn | None, row_hook: Callable[[int], None] | None,
                 allow_missing_mapping: bool) -> VersionSummary:
    if read.mapping.fatal and not allow_missing_mapping:
        raise MappingRefused(f"{source.path / MAPPING_FILE}: {read.mapping.fatal}; pass "
                             f"{ALLOW_FLAG} to ingest the version without it")
    with write_transaction(engine) as conn:
        alias, existing = _resolve_alias(conn, source)
        if existing is not None and existing.content_hash == read.digest:
            return VersionSummary(alias, source.directory, "unchanged",
                                  message=f"unchanged ({source.directory}), skipped")
        with bulk_load_settings(conn), gc_paused():
            if existing is not None:
                _delete_profile(conn, existing.id)
            pool = ahead.pool if ahead.pool.wanted(conn.dialect.name, read.jobs) else None
            if pool is not None:
                pool.submit(conn, source.path, read.jobs, read.mapping_raw)
            ahead.start_following(conn)
            return _load(conn, _Loading(source, alias, read, pool), progress, row_hook)


@dataclass(frozen=True)
class _Loading:
    """One version's load: what was read, its alias, and the workers converting it (None:
    converted in this process)."""

    source: VersionSource
    alias: str
    read: VersionRead
    pool: WorkerPool | None


def _resolve_alias(conn: Connection, source: VersionSource):
    """The version's alias and its existing profile row, if any.

    The short alias (``v0.18``) belongs to the first device ingested with it; the same
    version of another device gets ``<device>/v0.18``.
    """
    for alias in (source.short_alias, f"{source.device}/{source.short_alias}"):
        row = conn.execute(
            select(t.profile_set).where(t.profile_set.c.alias == alias)
        ).first()
        if row is None:
            return alias, None
        if (row.device, row.framework, row.directory) == (
            source.device, source.framework, source.directory
        ):
            return alias, row
    raise ValueError(f"alias collision for {source.path}")


def _delete_profile(conn: Connection, profile_id: int) -> None:
    for table in t.DATA_TABLES:
        conn.execute(delete(table).where(table.c.profile_id == profile_id))
    conn.execute(delete(t.profile_set).where(t.profile_set.c.id == profile_id))


def _load(
    conn: Connection,
    loading: _Loading,
    progress: ProgressFn | None,
    row_hook: Callable[[int], None] | None,
) -> VersionSummary:
    source, read = loading.source, loading.read
    profile_id = _insert_profile(conn, source, loading.alias, read.digest)
    writer = RowWriter(conn, profile_id)
    mapping = _write_mapping(writer, read.mapping)
    summary = VersionSummary(loading.alias, source.directory, "ingested")
    total = sum(1 for job in read.jobs if job.refusal is None)
    converted = (loading.pool.convert(writer, source.path, read.jobs, read.mapping_raw)
                 if loading.pool is not None
                 else ((job, write_file(writer, job, mapping)) for job in read.jobs))
    for job, counts in converted:
        if job.refusal is not None:
            summary.refused_files.append(f"{job.name} ({job.refusal})")
            continue
        _count(summary, counts)
        writer.flush()
        if row_hook:
            row_hook(summary.rows_read)
        if progress:
            progress(loading.alias, summary.files, total)
    writer.flush()
    writer.write_packs()
    summary.refused_files += [f"{' / '.join(group)} (names differ only by case; every row "
                              "rejected)" for group in read.entries.conflicts]
    _finish_profile(conn, profile_id, summary, mapping)
    return summary


def _count(summary: VersionSummary, counts: FileCounts) -> None:
    summary.files += 1
    summary.rows_read += counts.rows_read
    summary.rows_accepted += counts.rows_accepted
    summary.rows_rejected += counts.rows_rejected
    summary.reasons.update(counts.reject_codes)


def _insert_profile(conn: Connection, source: VersionSource, alias: str, digest: str) -> int:
    next_id = (conn.execute(select(func.max(t.profile_set.c.id))).scalar() or 0) + 1
    conn.execute(
        insert(t.profile_set).values(
            id=next_id,
            alias=alias,
            device=source.device,
            framework=source.framework,
            directory=source.directory,
            source_path=str(source.path),
            content_hash=digest,
            ingested_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            files=0,
            rows_read=0,
            rows_accepted=0,
            rows_rejected=0,
        )
    )
    return next_id


def _write_mapping(writer: RowWriter, outcome: MappingOutcome) -> VersionMapping:
    for code, reason in outcome.rejects:
        writer.reject_mapping(code, reason)
    if outcome.fatal is None and outcome.mapping is not EMPTY_MAPPING:
        writer.write_mapping(outcome.mapping)
    return outcome.mapping


def _finish_profile(
    conn: Connection, profile_id: int, summary: VersionSummary, mapping: VersionMapping
) -> None:
    conn.execute(
        t.profile_set.update()
        .where(t.profile_set.c.id == profile_id)
        .values(
            files=summary.files,
            rows_read=summary.rows_read,
            rows_accepted=summary.rows_accepted,
            rows_rejected=summary.rows_rejected,
            mapping_document=json.dumps(mapping.to_document(), sort_keys=True),
            mapping_problems=json.dumps(list(mapping.problems)),
        )
    )
