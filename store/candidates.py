"""SQL for the hot queries: exact keys, exact coordinates, and a regime's points.

Every query names the profile, kernel and (for points) path and regime key, so each
is a range scan of an index or primary key in ``store.schema`` (keys: the kernel's file,
then the key; points: the regime, then its coordinate index), then its samples by id. A regime's
points are cached as numpy arrays (bounded LRU): interpolation, duplicate handling
and hold-out exclusion work on that slice without going back to the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from profstore import schema as t
from profstore.exact_keys import output_key
from profstore.lru import LRU
from profstore.statements import Statement
from sqlalchemy import Engine, bindparam, func, select

__all__ = ["LRU", "CandidateQueries", "MeasuredRow", "RegimeSlice"]

AXIS_COLUMNS = (t.point.c.axis_0, t.point.c.axis_1, t.point.c.axis_2)


class MeasuredRow(NamedTuple):
    """One measured row with its provenance (a named tuple: a regime slice makes one per
    point, and a frozen dataclass costs several times as much to build)."""

    sample_id: int
    latency_us: float
    latency_column: str
    line_no: int
    file_name: str
    axes: tuple[float, ...] = ()
    semantic: str | None = None

    def provenance(self) -> dict:
        return {
            "file": self.file_name,
            "line": self.line_no,
            "latency_us": self.latency_us,
            "latency_column": self.latency_column,
            **({"axes": list(self.axes)} if self.axes else {}),
        }


@dataclass(frozen=True)
class RegimeSlice:
    """Every point of one (profile, kernel, path, regime), as arrays."""

    axes: np.ndarray
    latency: np.ndarray
    columns: tuple[str, ...]
    rows: tuple[MeasuredRow, ...]

    def __len__(self) -> int:
        return len(self.rows)


def _point_select():
    p, s = t.point.c, t.sample_table.c
    return (
        select(p.sample_id, s.latency_us, s.latency_column, s.line_no, s.kernel_file_id,
               p.axis_0, p.axis_1, p.axis_2, p.semantic_key, p.id)
        .select_from(t.point)
        .join(t.regime, t.regime.c.id == p.regime_id)
        .join(t.sample_table, s.id == p.sample_id)
    )


def _point_order(r: Sequence[Any]) -> tuple:
    """Axes (NULL first, as SQLite sorts), latency column, latency, point id: the order the
    coordinate index gave before 0005. Sorting the fetched rows costs a fraction of the
    temporary b-tree an ORDER BY over the joined columns needs, and is the same on every
    backend (PostgreSQL sorts NULL last and text by its collation)."""
    return (_NULL_FIRST if r[5] is None else r[5], _NULL_FIRST if r[6] is None else r[6],
            _NULL_FIRST if r[7] is None else r[7], r[2], r[1], r[9])


_NULL_FIRST = float("-inf")
_P = t.point.c
_G = t.regime.c
_K = t.key_table.c
_S = t.sample_table.c
_KERNEL_PRESENT = Statement(select(t.kernel_file.c.id).where(
    t.kernel_file.c.profile_id == bindparam("profile"),
    t.kernel_file.c.kernel_type == bindparam("kernel"),
).limit(1))
_KEY_COLUMNS = (_K.sample_id, _S.latency_us, _S.latency_column, _S.line_no,
                t.kernel_file.c.file_name)
_KEY_JOIN = (
    select(*_KEY_COLUMNS)
    .select_from(t.kernel_file)
    .join(t.key_table, _K.kernel_file_id == t.kernel_file.c.id)
    .join(t.sample_table, _S.id == _K.sample_id)
    .where(t.kernel_file.c.profile_id == bindparam("profile"),
           t.kernel_file.c.kernel_type == bindparam("kernel"))
)
_EXACT_KEY = Statement(_KEY_JOIN.where(_K.exact_key == bindparam("key"))
                       .order_by(_S.latency_column, _S.latency_us, _K.sample_id))
_OUTPUT_SHAPE = Statement(
    _KEY_JOIN.add_columns(_K.exact_key)
    .where(_K.exact_key >= bindparam("low"), _K.exact_key < bindparam("high"))
    .order_by(_K.exact_key, _K.sample_id)
)
_REGIME_SLICE_SELECT = _point_select().where(
    _G.profile_id == bindparam("profile"), _G.kernel_type == bindparam("kernel"),
    _G.path == bindparam("path"), _G.regime_key == bindparam("regime"),
)
_REGIME_SLICE = Statement(_REGIME_SLICE_SELECT)
_POINTS_AT = tuple(
    Statement(_REGIME_SLICE_SELECT.where(
        *[AXIS_COLUMNS[i] == bindparam(f"a{i}") for i in range(n)]))
    for n in range(4)
)
_FILE_NAMES = Statement(select(t.kernel_file.c.id, t.kernel_file.c.file_name).where(
    t.kernel_file.c.profile_id == bindparam("profile")))
_REGIME_STATS = Statement(
    select(func.count(), func.count(_G.id.distinct()))
    .select_from(t.point).join(t.regime, t.regime.c.id == _P.regime_id)
    .where(_G.profile_id == bindparam("profile"), _G.kernel_type == bindparam("kernel"),
           _G.path == bindparam("path")))
_R = t.path_refusal.c
_REFUSALS = Statement(
    select(_R.reason, func.count())
    .where(_R.profile_id == bindparam("profile"), _R.kernel_type == bindparam("kernel"),
           _R.path == bindparam("path"))
    .group_by(_R.reason)
)
"""Hot statements are built once with bound parameters and compiled once per dialect
(``store.statements``); inside a lookup's snapshot they run on its DBAPI cursor."""


class CandidateQueries:
    def __init__(self, engine: Engine | Any, slice_cache_size: int = 512) -> None:
        self.engine = engine
        self._slices = LRU(slice_cache_size)
        self._kernels = LRU(4096)
        self._stats = LRU(1024)
        self._files = LRU(64)

    def clear(self) -> None:
        self._slices.clear()
        self._kernels.clear()
        self._stats.clear()
        self._files.clear()

    def kernel_present(self, profile_id: int, kernel: str) -> bool:
        key = (profile_id, kernel)
        cached = self._kernels.get(key)
        if cached is None:
            cached = bool(_KERNEL_PRESENT.rows(self.engine, profile=profile_id, kernel=kernel))
            self._kernels.put(key, cached)
        return cached

    def exact_key_rows(
        self, profile_id: int, kernel: str, key: str, exclude: frozenset[int] = frozenset()
    ) -> list[MeasuredRow]:
        rows = _EXACT_KEY.rows(self.engine, profile=profile_id, kernel=kernel, key=key)
        return [MeasuredRow(r[0], r[1], r[2], r[3], r[4]) for r in rows if r[0] not in exclude]

    def output_shape_rows(
        self, profile_id: int, kernel: str, shape: tuple[int, ...],
        exclude: frozenset[int] = frozenset(),
    ) -> list[tuple[str, MeasuredRow]]:
        """Rows whose first output has this (batch-stripped) shape, in any dtype."""
        prefix = output_key(shape, "")
        rows = _OUTPUT_SHAPE.rows(self.engine, profile=profile_id, kernel=kernel, low=prefix,
                                  high=prefix[:-1] + chr(ord(":") + 1))
        return [(r[5][len(prefix):], MeasuredRow(r[0], r[1], r[2], r[3], r[4]))
                for r in rows if r[0] not in exclude]

    def points_at(
        self,
        profile_id: int,
        kernel: str,
        path: str,
        regime_key: str,
        axes: Sequence[float],
        exclude: frozenset[int] = frozenset(),
    ) -> list[MeasuredRow]:
        """Rows at one exact coordinate of a regime (the specialised exact lookup); read
        from the regime's slice when it is cached, in the same order."""
        target = tuple(float(v) for v in axes)
        full = self._slices.get((profile_id, kernel, path, regime_key))
        if full is not None:
            n = len(target)
            return [r for r in full.rows if r.axes[:n] == target and r.sample_id not in exclude]
        rows = self._measured_rows(profile_id, _POINTS_AT[len(target)].rows(
            self.engine, profile=profile_id, kernel=kernel, path=path, regime=regime_key,
            **{f"a{i}": v for i, v in enumerate(target)}))
        return [r for r in rows if r.sample_id not in exclude]

    def regime_slice(
        self,
        profile_id: int,
        kernel: str,
        path: str,
        regime_key: str,
        exclude: frozenset[int] = frozenset(),
    ) -> RegimeSlice:
        key = (profile_id, kernel, path, regime_key)
        full = self._slices.get(key)
        if full is None:
            full = self._load_slice(profile_id, kernel, path, regime_key)
            self._slices.put(key, full)
        if not exclude:
            return full
        keep = [i for i, r in enumerate(full.rows) if r.sample_id not in exclude]
        return RegimeSlice(
            full.axes[keep], full.latency[keep], tuple(full.columns[i] for i in keep),
            tuple(full.rows[i] for i in keep),
        )

    def _load_slice(self, profile_id: int, kernel: str, path: str, regime_key: str) -> RegimeSlice:
        rows = self._measured_rows(profile_id, _REGIME_SLICE.rows(
            self.engine, profile=profile_id, kernel=kernel, path=path, regime=regime_key))
        width = max((len(r.axes) for r in rows), default=0)
        axes = np.array([r.axes for r in rows], dtype=float).reshape(len(rows), width)
        latency = np.array([r.latency_us for r in rows], dtype=float)
        return RegimeSlice(axes, latency, tuple(r.latency_column for r in rows), tuple(rows))

    def _measured_rows(self, profile_id: int, fetched: Sequence[Sequence[Any]]
                       ) -> list[MeasuredRow]:
        """Point rows (``_point_select``'s columns) as measured rows, in ``_point_order``."""
        files = self._file_names(profile_id)
        return [MeasuredRow(r[0], r[1], r[2], r[3], files[r[4]],
                            tuple(float(v) for v in (r[5], r[6], r[7]) if v is not None), r[8])
                for r in sorted(fetched, key=_point_order)]

    def _file_names(self, profile_id: int) -> dict[int, str]:
        """Kernel file id -> file name of a profile: one small read instead of a join per
        point."""
        names = self._files.get(profile_id)
        if names is None:
            names = dict(_FILE_NAMES.rows(self.engine, profile=profile_id))
            self._files.put(profile_id, names)
        return names

    def regime_stats(self, profile_id: int, kernel: str, path: str) -> tuple[int, int]:
        """(points, distinct regimes) of a kernel on a path: a regime mismatch vs. no data."""
        key = ("stats", profile_id, kernel, path)
        cached = self._stats.get(key)
        if cached is None:
            points, regimes = _REGIME_STATS.rows(self.engine, profile=profile_id,
                                                 kernel=kernel, path=path)[0]
            cached = (int(points), int(regimes))
            self._stats.put(key, cached)
        return cached

    def refusal_counts(self, profile_id: int, kernel: str, path: str) -> dict[str, int]:
        key = ("refusals", profile_id, kernel, path)
        cached = self._stats.get(key)
        if cached is None:
            cached = {reason: int(n) for reason, n in _REFUSALS.rows(
                self.engine, profile=profile_id, kernel=kernel, path=path)}
            self._stats.put(key, cached)
        return dict(cached)
