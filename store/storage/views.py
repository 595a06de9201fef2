"""The SQL views ``regimes`` and ``duplicates`` (created by the migrations) read for one
version: what ``profstore regimes``/``duplicates`` print is what an engineer gets from
the same view in the ``sqlite3`` shell."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, column, select, table

AXES = ("axis_0", "axis_1", "axis_2")

REGIMES_VIEW = table("regimes", *[column(n) for n in (
    "version", "kernel_type", "path", "regime_key", "points", "latency_columns",
    *[f"{a}_{end}" for a in AXES for end in ("min", "max")])])
DUPLICATES_VIEW = table("duplicates", *[column(n) for n in (
    "version", "kernel_type", "path", "regime_key", *AXES, "latency_column",
    "rows_at_coordinate", "latency_min", "latency_median", "latency_max", "first_line")])


@dataclass(frozen=True)
class AxisRange:
    min: float
    max: float


@dataclass(frozen=True)
class RegimeSummary:
    """One row of the ``regimes`` view: a regime, its points and the range of each axis
    (None for an axis the path does not have)."""

    kernel_type: str
    path: str
    regime_key: str
    points: int
    latency_columns: int
    axes: tuple[AxisRange | None, ...]


def regime_summaries(conn: Connection, alias: str, kernel: str | None = None,
                     path: str | None = None) -> list[RegimeSummary]:
    """The version's regimes (of one kernel and path where given), by kernel, path and
    regime key."""
    v = REGIMES_VIEW.c
    query = select(REGIMES_VIEW).where(v.version == alias)
    if kernel:
        query = query.where(v.kernel_type == kernel)
    if path:
        query = query.where(v.path == path)
    found = conn.execute(query.order_by(v.kernel_type, v.path, v.regime_key)).all()
    return [RegimeSummary(
        r.kernel_type, r.path, r.regime_key, r.points, r.latency_columns,
        tuple(None if r._mapping[f"{a}_min"] is None else
              AxisRange(r._mapping[f"{a}_min"], r._mapping[f"{a}_max"]) for a in AXES))
        for r in found]


@dataclass(frozen=True)
class DuplicateCoordinate:
    """One row of the ``duplicates`` view: a coordinate measured more than once, the spread
    of its latencies and the first CSV line among its rows."""

    kernel_type: str
    path: str
    regime_key: str
    coordinate: tuple[float, ...]
    latency_column: str
    rows_at_coordinate: int
    latency_min: float
    latency_median: float
    latency_max: float
    first_line: int


def duplicate_coordinates(conn: Connection, alias: str,
                          kernel: str | None = None) -> list[DuplicateCoordinate]:
    """The version's duplicate coordinates (of one kernel where given), by kernel, path,
    regime key, axes and latency column."""
    v = DUPLICATES_VIEW.c
    query = select(DUPLICATES_VIEW).where(v.version == alias)
    if kernel:
        query = query.where(v.kernel_type == kernel)
    order = (v.kernel_type, v.path, v.regime_key, v.axis_0, v.axis_1, v.axis_2,
             v.latency_column)
    return [DuplicateCoordinate(
        r.kernel_type, r.path, r.regime_key,
        tuple(a for a in (r.axis_0, r.axis_1, r.axis_2) if a is not None), r.latency_column,
        r.rows_at_coordinate, r.latency_min, r.latency_median, r.latency_max, r.first_line)
        for r in conn.execute(query.order_by(*order))]
