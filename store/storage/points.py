"""A version's sample points read in bulk, for the evaluation: every measured coordinate,
one kernel's points, one regime's points, the regimes of a kernel with their counts and
the regime values the points cover.

Each reader keeps its own column list and no ``ORDER BY`` where the caller never asked
for one: the row order the database returns for it is the order the figures were
computed in (the nearest of two coordinates at the same distance is the first read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profstore.storage import schema as t
from sqlalchemy import Connection, func, select

Axes = tuple[float, ...]
"""A point's coordinate: its axes that are set, in axis order."""

SUBTYPE_COLUMNS = ("quant_subtype", "activation_dtype", "weight_dtype", "scale_mode",
                   "ep_size", "topk", "sparse_phase", "cache_dtype")
"""The regime columns that tell the variants of a specialised path apart."""

_P = t.sample_point.c


def _axes(a0: Any, a1: Any, a2: Any) -> Axes:
    return tuple(float(v) for v in (a0, a1, a2) if v is not None)


@dataclass(frozen=True, slots=True)
class VersionPoint:
    """One sample point of a version: where it is, its latency and its sample."""

    kernel: str
    path: str
    regime_key: str
    axes: Axes
    semantic_key: str | None
    latency_us: float
    sample_id: int


def version_points(conn: Connection, profile_id: int) -> list[VersionPoint]:
    """Every sample point of the version."""
    stmt = select(_P.kernel_type, _P.path, _P.regime_key, _P.axis_0, _P.axis_1, _P.axis_2,
                  _P.semantic_key, _P.latency_us, _P.sample_id).where(
        _P.profile_id == profile_id)
    return [VersionPoint(kernel, path, regime, _axes(a0, a1, a2), semantic, latency, sample)
            for kernel, path, regime, a0, a1, a2, semantic, latency, sample
            in conn.execute(stmt)]


@dataclass(frozen=True, slots=True)
class KernelPoint:
    """One sample point of a kernel: its path, regime, coordinate and latency."""

    path: str
    regime_key: str
    axes: Axes
    latency_us: float


def kernel_points(conn: Connection, profile_id: int, kernel: str) -> list[KernelPoint]:
    """Every sample point of one kernel, on every path."""
    stmt = select(_P.path, _P.regime_key, _P.axis_0, _P.axis_1, _P.axis_2, _P.latency_us
                  ).where(_P.profile_id == profile_id, _P.kernel_type == kernel)
    return [KernelPoint(path, key, _axes(a0, a1, a2), latency)
            for path, key, a0, a1, a2, latency in conn.execute(stmt)]


@dataclass(frozen=True, slots=True)
class PointSample:
    """Which sample stands at a coordinate (and semantic discriminator) of a regime."""

    kernel: str
    path: str
    regime_key: str
    axes: Axes
    semantic_key: str | None
    sample_id: int


def point_samples(conn: Connection, profile_id: int, kernel: str | None = None,
                  path: str | None = None, regime_key: str | None = None
                  ) -> list[PointSample]:
    """The version's points without latencies, narrowed to a kernel, a path and a regime
    key where given."""
    stmt = select(_P.kernel_type, _P.path, _P.regime_key, _P.axis_0, _P.axis_1, _P.axis_2,
                  _P.semantic_key, _P.sample_id).where(_P.profile_id == profile_id)
    for column, value in ((_P.kernel_type, kernel), (_P.path, path),
                          (_P.regime_key, regime_key)):
        if value is not None:
            stmt = stmt.where(column == value)
    return [PointSample(k, pa, key, _axes(a0, a1, a2), semantic, int(sample))
            for k, pa, key, a0, a1, a2, semantic, sample in conn.execute(stmt)]


@dataclass(frozen=True, slots=True)
class RegimePoint:
    """One point of a regime: its coordinate and latency."""

    axes: Axes
    latency_us: float


def regime_points(conn: Connection, profile_id: int, kernel: str, path: str,
                  regime_key: str) -> list[RegimePoint]:
    """Every point of one regime."""
    stmt = select(_P.axis_0, _P.axis_1, _P.axis_2, _P.latency_us).where(
        _P.profile_id == profile_id, _P.kernel_type == kernel, _P.path == path,
        _P.regime_key == regime_key)
    return [RegimePoint(_axes(a0, a1, a2), latency)
            for a0, a1, a2, latency in conn.execute(stmt)]


@dataclass(frozen=True)
class RegimeCount:
    """A regime of a kernel and how many points it has."""

    kernel: str
    path: str
    regime_key: str
    points: int


def kernel_regimes(conn: Connection, profile_id: int, kernel: str,
                   path: str | None = None) -> list[RegimeCount]:
    """The regimes of a kernel (of one path, when given), by path and regime key."""
    stmt = (select(_P.kernel_type, _P.path, _P.regime_key, func.count())
            .where(_P.profile_id == profile_id, _P.kernel_type == kernel)
            .group_by(_P.kernel_type, _P.path, _P.regime_key)
            .order_by(_P.kernel_type, _P.path, _P.regime_key))
    if path is not None:
        stmt = stmt.where(_P.path == path)
    return [RegimeCount(*row) for row in conn.execute(stmt)]


@dataclass(frozen=True)
class KernelPath:
    kernel: str
    path: str


def kernel_paths(conn: Connection, profile_id: int) -> list[KernelPath]:
    """Each (kernel, path) with points, once."""
    stmt = select(_P.kernel_type, _P.path).where(_P.profile_id == profile_id).distinct()
    return [KernelPath(str(k), str(pa)) for k, pa in conn.execute(stmt)]


@dataclass(frozen=True)
class SubtypeValues:
    """One distinct combination of ``SUBTYPE_COLUMNS`` values among a kernel's points on
    a path (None: the column is not set for them)."""

    path: str
    kernel: str
    values: tuple[Any, ...]


def subtype_values(conn: Connection, profile_id: int) -> list[SubtypeValues]:
    """The subtype combinations the points of every specialised path (all but generic)
    cover."""
    stmt = select(_P.path, _P.kernel_type, *[_P[n] for n in SUBTYPE_COLUMNS]).distinct().where(
        _P.profile_id == profile_id, _P.path != "generic")
    return [SubtypeValues(path, kernel, tuple(values))
            for path, kernel, *values in conn.execute(stmt)]
