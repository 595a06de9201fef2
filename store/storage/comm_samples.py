"""A version's communication rows (``comm_sample``): one collective's points on a number
of devices (what a communication lookup reads), and every row grouped for the hold-out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profstore.storage import schema as t
from profstore.storage.statements import Statement
from sqlalchemy import Connection, bindparam, select


@dataclass(frozen=True)
class CommPoint:
    """One measured size of a collective: its latency, topology tier and CSV line."""

    message_bytes: float
    latency_us: float
    tier: str | None
    line_no: int


_C = t.comm_sample.c
_COLLECTIVE_PRESENT = Statement(select(_C.id).where(
    _C.profile_id == bindparam("profile"), _C.collective == bindparam("collective")).limit(1))
_COLLECTIVE_POINTS = Statement(select(_C.message_bytes, _C.latency_us, _C.topology_tier,
                                      _C.line_no).where(
    _C.profile_id == bindparam("profile"), _C.collective == bindparam("collective"),
    _C.num_devices == bindparam("devices")))


def collective_points(engine: Any, profile_id: int, collective: str,
                      devices: int) -> list[CommPoint] | None:
    """The collective's points on ``devices`` devices (empty when it has rows for other
    device counts only); None when the profile has no row of the collective at all.
    ``engine`` as for ``Statement.rows`` (a lookup's snapshot runs them on its cursor)."""
    present = _COLLECTIVE_PRESENT.rows(engine, profile=profile_id, collective=collective)
    rows = _COLLECTIVE_POINTS.rows(engine, profile=profile_id, collective=collective,
                                   devices=devices)
    return None if not present else [CommPoint(*r) for r in rows]


@dataclass(frozen=True)
class CommSample:
    """One communication row: which collective, on how many devices, and its point."""

    collective: str
    devices: int
    point: CommPoint


def comm_samples(conn: Connection, profile_id: int) -> list[CommSample]:
    """Every communication row of the profile."""
    return [CommSample(collective, int(devices), CommPoint(size, latency, tier, line))
            for collective, devices, size, latency, tier, line in conn.execute(
                select(_C.collective, _C.num_devices, _C.message_bytes, _C.latency_us,
                       _C.topology_tier, _C.line_no).where(_C.profile_id == profile_id))]
