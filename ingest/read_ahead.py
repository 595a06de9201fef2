"""A version's files read before its load, and the next version's conversion started early.

While one version is written and committed, the worker processes already convert the
next one (``ingest.parallel``). Its files are read and submitted when the current
version's load begins, unless it would not be loaded: a refused mapping, or contents a
stored version already has (decided again, under the write lock, when its turn comes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from profstore.ingest.data_file import FileJob
from profstore.ingest.discover import (
    HCCL,
    MAPPING_FILE,
    VersionEntries,
    VersionSource,
    content_hash,
    scan_entries,
)
from profstore.ingest.mapping_file import MappingOutcome, parse_mapping
from profstore.ingest.parallel import WorkerPool
from profstore.storage import schema as t
from sqlalchemy import Connection, func, select


@dataclass(frozen=True)
class VersionRead:
    """A version directory's entries, file bytes, parsed mapping, content hash and jobs."""

    entries: VersionEntries
    files: dict[str, bytes]
    mapping: MappingOutcome
    digest: str
    jobs: list[FileJob]

    @property
    def mapping_raw(self) -> bytes | None:
        return self.files.get(MAPPING_FILE)


def read_version(source: VersionSource) -> VersionRead:
    entries = scan_entries(source.path)
    files = {p.name: p.read_bytes() for p in entries.readable}
    return VersionRead(entries, files, parse_mapping(files), content_hash(files),
                       file_jobs(source, files, entries))


def file_jobs(source: VersionSource, files: dict[str, bytes],
              entries: VersionEntries) -> list[FileJob]:
    """The version's CSVs in name order, then the entries that could not be opened."""
    hccl = source.framework == HCCL
    conflicts = {name: tuple(group) for group in entries.conflicts for name in group}
    jobs = [FileJob(name, files[name], hccl, conflicts.get(name, ()))
            for name in sorted(files) if name.lower().endswith(".csv")]
    jobs += [FileJob(entry.name, b"", hccl, refusal=entry.reason) for entry in entries.refused]
    return jobs


class ReadAhead:
    """The versions of one ingest call read ahead of their load; ``following`` is the
    version after the one being loaded."""

    def __init__(self, pool: WorkerPool, allow_missing_mapping: bool = False) -> None:
        self.pool = pool
        self.allow_missing_mapping = allow_missing_mapping
        self.following: VersionSource | None = None
        self._read: dict[Path, VersionRead] = {}

    def take(self, source: VersionSource) -> VersionRead:
        return self._read.pop(source.path, None) or read_version(source)

    def start_following(self, conn: Connection) -> None:
        """Read the following version and submit its files to the workers (``conn``: the
        current version's transaction)."""
        source = self.following
        if source is None or source.path in self._read:
            return
        read = self._read[source.path] = read_version(source)
        if read.mapping.fatal and not self.allow_missing_mapping:
            return
        if _stored(conn, source, read.digest) or not self.pool.wanted(conn.dialect.name,
                                                                      read.jobs):
            return
        self.pool.submit(conn, source.path, read.jobs, read.mapping_raw)


def _stored(conn: Connection, source: VersionSource, digest: str) -> bool:
    """A stored version of this directory has these contents (it will be "unchanged")."""
    p = t.profile_set.c
    found = conn.execute(select(func.count()).where(
        p.content_hash == digest, p.directory == source.directory, p.device == source.device,
        p.framework == source.framework)).scalar()
    return bool(found)
