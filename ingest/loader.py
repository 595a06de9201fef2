"""Load version directories into the database: idempotent, one transaction per version."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from profstore import schema as t
from profstore.db import bulk_load_settings
from profstore.ingest.csvfile import LFS_MARKER, RejectCode
from profstore.ingest.discover import (
    HCCL,
    MAPPING_FILE,
    VersionEntries,
    VersionSource,
    content_hash,
    scan_entries,
    survey,
)
from profstore.ingest.files import FileCounts, FileJob, gc_paused, write_file
from profstore.ingest.lock import WaitFn, ingest_lock, write_transaction
from profstore.ingest.parallel import convert_in_workers, worker_count
from profstore.ingest.rows_to_sql import RowWriter
from profstore.mapping import MappingError, VersionMapping, load_mapping
from sqlalchemy import Connection, Engine, delete, func, insert, select

EMPTY_MAPPING = VersionMapping(header={}, entries={}, policies={})

ProgressFn = Callable[[str, int, int], None]
"""progress(label, files_done, files_total)."""
ALLOW_FLAG = "--allow-missing-mapping"


class MappingRefused(ValueError):
    """The version's op_mapping.yaml cannot be used and the caller did not allow that."""


@dataclass(frozen=True)
class MappingOutcome:
    """The parsed mapping, the rejected-row records for the file, and ``fatal`` when the
    file as a whole is unusable (a Git LFS pointer, not UTF-8, broken YAML, a bomb)."""

    mapping: VersionMapping
    rejects: list[tuple[RejectCode, str]]
    fatal: str | None = None


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
) -> list[VersionSummary]:
    """Ingest every version under ``path``, holding the database's ingest lock (another
    ingest running: ``on_wait(message)``, then wait, or ``IngestBusy`` when not ``wait``).
    A version that cannot be ingested gets a ``failed`` summary and the others go on.
    ``row_hook(n)`` is called after each file with the running row count (tests inject
    failures through it). ``workers``: processes that read and convert files while this
    one writes (0: all in this process; None: chosen by ``ingest.parallel.worker_count``)."""
    found = survey(Path(path))
    summaries = [_note(p, "empty", f"empty version directory {p}: no CSV files, nothing "
                       "ingested") for p in found.empty]
    summaries += [_note(p, "repeat", f"{p} is {same} reached again through a symlink; "
                        "ingested once") for p, same in found.repeats]
    with ingest_lock(engine, wait=wait, on_wait=on_wait):
        for source in found.sources:
            try:
                summaries.append(ingest_version(
                    engine, source, progress=progress, row_hook=row_hook,
                    allow_missing_mapping=allow_missing_mapping, workers=workers))
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
) -> VersionSummary:
    started = time.perf_counter()
    entries = scan_entries(source.path)
    files = {p.name: p.read_bytes() for p in entries.readable}
    outcome = parse_mapping(files)
    if outcome.fatal and not allow_missing_mapping:
        raise MappingRefused(f"{source.path / MAPPING_FILE}: {outcome.fatal}; pass "
                             f"{ALLOW_FLAG} to ingest the version without it")
    digest = content_hash(files)
    with write_transaction(engine) as conn:
        alias, existing = _resolve_alias(conn, source)
        if existing is not None and existing.content_hash == digest:
            return VersionSummary(alias, source.directory, "unchanged",
                                  message=f"unchanged ({source.directory}), skipped")
        with bulk_load_settings(conn), gc_paused():
            if existing is not None:
                _delete_profile(conn, existing.id)
            loading = _Loading(source, alias, files, entries, outcome)
            summary = _load(conn, loading, digest, progress, row_hook, workers)
    summary.seconds = time.perf_counter() - started
    return summary


@dataclass(frozen=True)
class _Loading:
    """What one version's load reads: its files' bytes, its entries, its mapping."""

    source: VersionSource
    alias: str
    files: dict[str, bytes]
    entries: VersionEntries
    mapping: MappingOutcome


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
    digest: str,
    progress: ProgressFn | None,
    row_hook: Callable[[int], None] | None,
    workers: int | None = None,
) -> VersionSummary:
    source = loading.source
    profile_id = _insert_profile(conn, source, loading.alias, digest)
    writer = RowWriter(conn, profile_id)
    mapping = _write_mapping(writer, loading.mapping)
    summary = VersionSummary(loading.alias, source.directory, "ingested")
    jobs = _jobs(loading)
    total = sum(1 for job in jobs if job.refusal is None)
    count = worker_count(conn, jobs, workers)
    converted = (convert_in_workers(writer, mapping, jobs, count) if count
                 else ((job, write_file(writer, job, mapping)) for job in jobs))
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
    summary.refused_files += [f"{' / '.join(group)} (names differ only by case; every row "
                              "rejected)" for group in loading.entries.conflicts]
    _finish_profile(conn, profile_id, summary, mapping)
    return summary


def _jobs(loading: _Loading) -> list[FileJob]:
    """The version's CSVs in name order, then the entries that could not be opened."""
    hccl = loading.source.framework == HCCL
    conflicts = {name: tuple(group) for group in loading.entries.conflicts for name in group}
    files = loading.files
    jobs = [FileJob(name, files[name], hccl, conflicts.get(name, ()))
            for name in sorted(files) if name.lower().endswith(".csv")]
    jobs += [FileJob(entry.name, b"", hccl, refusal=entry.reason)
             for entry in loading.entries.refused]
    return jobs


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


def parse_mapping(files: dict[str, bytes]) -> MappingOutcome:
    """The version's mapping. A file that cannot be used at all is ``fatal`` (the caller
    refuses the version unless allowed) and becomes a rejected row of op_mapping.yaml;
    the CSVs then ingest under the default policy."""
    if MAPPING_FILE not in files:
        return MappingOutcome(EMPTY_MAPPING, [])
    raw = files[MAPPING_FILE]
    if raw.startswith(LFS_MARKER.encode()):
        reason = "op_mapping.yaml is a Git LFS pointer, not its content; run git lfs pull"
        return MappingOutcome(EMPTY_MAPPING, [(RejectCode.LFS_POINTER, reason)], reason)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        reason = f"op_mapping.yaml is not UTF-8: {exc}"
        return MappingOutcome(EMPTY_MAPPING, [(RejectCode.UNREADABLE_FILE, reason)], reason)
    try:
        mapping = load_mapping(text, is_text=True)
    except MappingError as exc:
        reason = f"op_mapping.yaml refused: {exc}"
        return MappingOutcome(EMPTY_MAPPING, [(RejectCode.MAPPING_PROBLEM, reason)], reason)
    return MappingOutcome(mapping, [(RejectCode.MAPPING_PROBLEM, p) for p in mapping.problems])


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
