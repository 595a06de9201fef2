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
from profstore.ingest.csvfile import FileReadout, RejectCode, read_kernel_csv
from profstore.ingest.discover import (
    HCCL,
    MAPPING_FILE,
    VersionSource,
    content_hash,
    discover,
    file_hash,
)
from profstore.ingest.hccl import CommReadout, read_comm_csv
from profstore.ingest.rows_to_sql import RowWriter
from profstore.mapping import MappingError, VersionMapping, load_mapping
from sqlalchemy import Connection, Engine, delete, func, insert, select

EMPTY_MAPPING = VersionMapping(header={}, entries={}, policies={})

ProgressFn = Callable[[str, int, int], None]
"""progress(label, files_done, files_total)."""


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

    def line(self) -> str:
        if self.status == "unchanged":
            return f"{self.alias}: unchanged ({self.directory}), skipped"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.reasons.items())) or "none"
        return (
            f"{self.alias}: {self.files} files, {self.rows_read} rows read, "
            f"{self.rows_accepted} accepted, {self.rows_rejected} rejected ({reasons}) "
            f"in {self.seconds:.2f}s"
        )


def ingest_path(
    engine: Engine,
    path: str | Path,
    *,
    progress: ProgressFn | None = None,
    row_hook: Callable[[int], None] | None = None,
) -> list[VersionSummary]:
    """Ingest every version under ``path``. ``row_hook(n)`` is called after each file with
    the running row count (tests inject failures through it)."""
    return [
        ingest_version(engine, source, progress=progress, row_hook=row_hook)
        for source in discover(Path(path))
    ]


def ingest_version(
    engine: Engine,
    source: VersionSource,
    *,
    progress: ProgressFn | None = None,
    row_hook: Callable[[int], None] | None = None,
) -> VersionSummary:
    started = time.perf_counter()
    files = {p.name: p.read_bytes() for p in source.files()}
    digest = content_hash(files)
    with engine.begin() as conn:
        alias, existing = _resolve_alias(conn, source)
        if existing is not None and existing.content_hash == digest:
            return VersionSummary(alias, source.directory, "unchanged")
        with bulk_load_settings(conn):
            if existing is not None:
                _delete_profile(conn, existing.id)
            summary = _load(conn, source, alias, files, digest, progress, row_hook)
    summary.seconds = time.perf_counter() - started
    return summary


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
    source: VersionSource,
    alias: str,
    files: dict[str, bytes],
    digest: str,
    progress: ProgressFn | None,
    row_hook: Callable[[int], None] | None,
) -> VersionSummary:
    profile_id = _insert_profile(conn, source, alias, digest)
    writer = RowWriter(conn, profile_id)
    mapping = _load_mapping(writer, files)
    summary = VersionSummary(alias, source.directory, "ingested")
    csv_names = [n for n in sorted(files) if n.lower().endswith(".csv")]
    for done, name in enumerate(csv_names, start=1):
        kernel = Path(name).stem
        readout: CommReadout | FileReadout
        if source.framework == HCCL:
            readout = read_comm_csv(files[name])
            writer.write_comm_file(name, kernel, file_hash(files[name]), readout)
        else:
            policy = mapping.policy(kernel)
            readout = read_kernel_csv(files[name], kernel, policy)
            writer.write_kernel_file(name, kernel, file_hash(files[name]), readout, mapping)
        summary.files += 1
        summary.rows_read += readout.rows_read
        summary.rows_accepted += len(readout.accepted)
        summary.rows_rejected += len(readout.rejected)
        summary.reasons.update(r.code.value for r in readout.rejected)
        writer.flush()
        if row_hook:
            row_hook(summary.rows_read)
        if progress:
            progress(alias, done, len(csv_names))
    _finish_profile(conn, profile_id, summary, mapping)
    return summary


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


def _load_mapping(writer: RowWriter, files: dict[str, bytes]) -> VersionMapping:
    """The version's mapping; a mapping that cannot be used becomes a rejected row of
    op_mapping.yaml and the version's CSVs still ingest (under the default policy)."""
    if MAPPING_FILE not in files:
        return EMPTY_MAPPING
    try:
        text = files[MAPPING_FILE].decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        writer.reject_mapping(RejectCode.UNREADABLE_FILE, f"op_mapping.yaml is not UTF-8: {exc}")
        return EMPTY_MAPPING
    try:
        mapping = load_mapping(text, is_text=True)
    except MappingError as exc:
        writer.reject_mapping(RejectCode.MAPPING_PROBLEM, f"op_mapping.yaml refused: {exc}")
        return EMPTY_MAPPING
    for problem in mapping.problems:
        writer.reject_mapping(RejectCode.MAPPING_PROBLEM, problem)
    writer.write_mapping(mapping)
    return mapping


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
