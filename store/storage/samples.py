"""A version's accepted CSV rows (``sample``) read in bulk: their ids, and the groups of
rows that measured the same call."""

from __future__ import annotations

from dataclasses import dataclass

from profstore.storage import schema as t
from sqlalchemy import Connection, select


def sample_ids(conn: Connection, profile_id: int) -> list[int]:
    """Every sample id of the version, ascending."""
    s = t.sample.c
    return sorted(conn.execute(select(s.id).where(s.profile_id == profile_id)).scalars())


@dataclass(frozen=True)
class DuplicateGroup:
    """Rows of one kernel with the same input and output cells, extra columns and latency
    column: one call measured ``len(latencies_us)`` times (two or more)."""

    kernel: str
    latencies_us: tuple[float, ...]


def duplicate_groups(conn: Connection, profile_id: int) -> list[DuplicateGroup]:
    """The version's duplicate groups, in the order their first rows are read."""
    s = t.sample.c
    stmt = select(s.kernel_type, s.input_shapes, s.input_dtypes, s.input_formats,
                  s.output_shapes, s.output_dtypes, s.output_formats, s.extras,
                  s.latency_column, s.latency_us).where(s.profile_id == profile_id)
    groups: dict[tuple, list[float]] = {}
    for row in conn.execute(stmt):
        groups.setdefault(tuple(row[:-1]), []).append(float(row[-1]))
    return [DuplicateGroup(key[0], tuple(latencies)) for key, latencies in groups.items()
            if len(latencies) > 1]
