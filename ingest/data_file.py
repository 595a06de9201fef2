"""One data file of a version, from its bytes to its rows in a ``RowWriter``.

The loader runs these in its own process, or ``ingest.parallel`` runs them in worker
processes; either way a file's rows depend only on the file and the version's mapping
(every id a file's rows carry belongs to that file: its kernel_file row, its samples,
its kernel's regimes, its kernel's exact keys).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from profstore.ingest.csvfile import (
    FileReadout,
    FileRefusal,
    RejectCode,
    read_kernel_csv,
    refuse_file,
    split_text,
)
from profstore.ingest.discover import file_hash
from profstore.ingest.hccl import CommReadout, is_comm_csv, read_comm_csv
from profstore.ingest.sql_writer import RowWriter
from profstore.model.mapping import VersionMapping


@dataclass(frozen=True)
class FileJob:
    """A file to read: ``hccl`` for a communication version; ``conflict`` the names it
    clashes with by case (every row rejected); ``refusal`` for an entry that could not be
    opened (no bytes, a ``kernel_file`` row naming why)."""

    name: str
    raw: bytes
    hccl: bool = False
    conflict: tuple[str, ...] = ()
    refusal: str | None = None


@dataclass(frozen=True)
class FileCounts:
    """A file's accounting for the version summary (rows read = accepted + rejected)."""

    rows_read: int
    rows_accepted: int
    rows_rejected: int
    reject_codes: tuple[str, ...]


def write_file(writer: RowWriter, job: FileJob, mapping: VersionMapping) -> FileCounts:
    """Read ``job`` and buffer its rows in ``writer`` (nothing is flushed)."""
    readout = _readout(job, mapping)
    stem = Path(job.name).stem
    if isinstance(readout, CommReadout):  # every file of an HCCL version is one
        writer.write_comm_file(job.name, stem, file_hash(job.raw), readout)
    else:
        writer.write_kernel_file(job.name, stem, file_hash(job.raw), readout, mapping)
    return FileCounts(readout.rows_read, len(readout.accepted), len(readout.rejected),
                      tuple(r.code.value for r in readout.rejected))


def _readout(job: FileJob, mapping: VersionMapping) -> CommReadout | FileReadout:
    if job.refusal is not None:
        return CommReadout(refusal=job.refusal) if job.hccl else FileReadout(refusal=job.refusal)
    if job.hccl or is_comm_csv(job.raw):
        return read_comm_csv(job.raw)
    if job.conflict:
        return _conflict_readout(job.raw, job.name, job.conflict)
    kernel = Path(job.name).stem
    return read_kernel_csv(job.raw, kernel, mapping.policy(kernel))


def _conflict_readout(raw: bytes, name: str, group: tuple[str, ...]) -> FileReadout:
    """Every data row of a case-conflicting file, rejected with the conflict."""
    others = ", ".join(n for n in group if n != name)
    reason = (f"{name} differs only by case from {others}: which file holds the kernel is "
              f"ambiguous, so none is used; rename or remove all but one")
    return refuse_file(FileReadout(), FileRefusal(RejectCode.NAME_CONFLICT, reason,
                                                  split_text(raw).lines))


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection for the block (restored after it).

    A load creates hundreds of thousands of tuples, dicts and dataclasses that live until
    their file is written; each full collection walked all of them again (a third of the
    conversion's CPU on v0.18). Ingest's rows form no reference cycles, so reference
    counting frees them as before; a cycle made meanwhile waits for the next collection.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
