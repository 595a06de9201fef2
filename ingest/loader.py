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
from profstore.ingest.csvfile import (
    LFS_MARKER,
    FileReadout,
    FileRefusal,
    RejectCode,
    read_kernel_csv,
    refuse_file,
    split_text,
)
from profstore.ingest.discover import (
    HCCL,
    MAPPING_FILE,
    VersionEntries,
    VersionSource,
    content_hash,
    file_hash,
    scan_entries,
    survey,
)
from profstore.ingest.hccl import CommReadout, is_comm_csv, read_comm_csv
from profstore.ingest.lock import WaitFn, ingest_lock, write_transaction
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
) -> list[VersionSummary]:
    """Ingest every version under ``path``, holding the database's ingest lock (another
    ingest running: ``on_wait(message)``, then wait, or ``IngestBusy`` when not ``wait``).
    A version that cannot be ingested gets a ``failed`` summary and the others go on.
    ``row_hook(n)`` is called after each file with the running row count (tests inject
    failures through it)."""
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
                    allow_missing_mapping=allow_missing_mapping))
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
        with bulk_load_settings(conn):
            if existing is not None:
                _delete_profile(conn, existing.id)
            loading = _Loading(source, alias, files, entries, outcome)
            summary = _load(conn, loading, digest, progress, row_hook)
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
) -> VersionSummary:
    source, files = loading.source, loading.files
    profile_id = _insert_profile(conn, source, loading.alias, digest)
    writer = RowWriter(conn, profile_id)
    mapping = _write_mapping(writer, loading.mapping)
    summary = VersionSummary(loading.alias, source.directory, "ingested")
    conflicts = {name: group for group in loading.entries.conflicts for name in group}
    csv_names = [n for n in sorted(files) if n.lower().endswith(".csv")]
    for done, name in enumerate(csv_names, start=1):
        kernel = Path(name).stem
        readout: CommReadout | FileReadout
        if source.framework == HCCL or is_comm_csv(files[name]):
            readout = read_comm_csv(files[name])
        elif name in conflicts:
            readout = _conflict_readout(files[name], name, conflicts[name])
        else:
            readout = read_kernel_csv(files[name], kernel, mapping.policy(kernel))
        _write_file(writer, source, name, files[name], readout, mapping)
        _count(summary, readout)
        writer.flush()
        if row_hook:
            row_hook(summary.rows_read)
        if progress:
            progress(loading.alias, done, len(csv_names))
    for entry in loading.entries.refused:
        empty = CommReadout(refusal=entry.reason) if source.framework == HCCL \
            else FileReadout(refusal=entry.reason)
        _write_file(writer, source, entry.name, b"", empty, mapping)
        summary.refused_files.append(f"{entry.name} ({entry.reason})")
    writer.flush()
    summary.refused_files += [f"{' / '.join(group)} (names differ only by case; every row "
                              "rejected)" for group in loading.entries.conflicts]
    _finish_profile(conn, profile_id, summary, mapping)
    return summary


def _write_file(writer: RowWriter, source: VersionSource, name: str, raw: bytes,
                readout, mapping: VersionMapping) -> None:
    if source.framework == HCCL or isinstance(readout, CommReadout):
        writer.write_comm_file(name, Path(name).stem, file_hash(raw), readout)
    else:
        writer.write_kernel_file(name, Path(name).stem, file_hash(raw), readout, mapping)


def _count(summary: VersionSummary, readout) -> None:
    summary.files += 1
    summary.rows_read += readout.rows_read
    summary.rows_accepted += len(readout.accepted)
    summary.rows_rejected += len(readout.rejected)
    summary.reasons.update(r.code.value for r in readout.rejected)


def _conflict_reason(name: str, group: list[str]) -> str:
    others = ", ".join(n for n in group if n != name)
    return (f"{name} differs only by case from {others}: which file holds the kernel is "
            f"ambiguous, so none is used; rename or remove all but one")


def _conflict_readout(raw: bytes, name: str, group: list[str]) -> FileReadout:
    """Every data row of a case-conflicting file, rejected with the conflict."""
    split = split_text(raw)
    reason = _conflict_reason(name, group)
    return refuse_file(FileReadout(), FileRefusal(RejectCode.NAME_CONFLICT, reason,
                                                  split.lines))


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
