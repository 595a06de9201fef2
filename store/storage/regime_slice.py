"""A regime's measured points column by column, in point order, as arrays.

A regime can hold hundreds or thousands of points while an answer names two to four of
them, so a slice keeps one array per column (numpy; a column with few distinct values, such
as the latency column, as the values and a code per point) and builds a ``MeasuredRow``
(with its file name and line) only for the rows an answer or an exact lookup reports. A
slice is built from fetched point rows (``build_slice``) or read whole from its stored pack
(``profstore.storage.regime_pack``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from profstore.storage import schema as t
from sqlalchemy import Select, select


def point_rows() -> Select:
    """Every stored point: its regime id, then a point row's columns (sample id, latency,
    latency column, line, kernel file, axes 0-2, semantic key, point id), the order
    ``PointColumns.of_rows`` unpacks."""
    p, s, f = t.point.c, t.sample_table.c, t.kernel_file.c
    return (select(p.regime_id, p.sample_id, s.latency_us, s.latency_column, s.line_no,
                   f.file_name, p.axis_0, p.axis_1, p.axis_2, p.semantic_key, p.id)
            .select_from(t.point.join(t.sample_table, s.id == p.sample_id)
                         .join(t.kernel_file, f.id == s.kernel_file_id)))


class MeasuredRow(NamedTuple):
    """One measured row with its provenance (a named tuple: a regime slice makes one per
    reported point, and a frozen dataclass costs several times as much to build)."""

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


def _none_first(value: Any) -> tuple[bool, Any]:
    return (value is not None, value)


@dataclass(frozen=True)
class Categories:
    """A column with few distinct values per regime (latency column, kernel file, semantic
    key): the distinct values, sorted (None first), and each point's index into them."""

    names: tuple[Any, ...]
    codes: np.ndarray

    def __getitem__(self, i: int) -> Any:
        return self.names[self.codes[i]]

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, keep: np.ndarray) -> Categories:
        return Categories(self.names, self.codes[keep])

    def local(self, codes: np.ndarray, single: int | None = None) -> Categories:
        """Some points' values (``codes``: theirs) as categories of their own: only the
        values they hold, in the same (sorted) order (``single``: the one code they all
        have, when the caller knows it)."""
        if single is not None:
            return Categories((self.names[single],), np.zeros(len(codes), dtype=np.int64))
        if len(self.names) <= 1:
            return Categories(self.names, codes)
        present = np.unique(codes)
        if len(present) == len(self.names):
            return Categories(self.names, codes)
        return Categories(tuple(self.names[c] for c in present.tolist()),
                          np.searchsorted(present, codes))

    @cached_property
    def values(self) -> tuple[Any, ...]:
        """Every point's value (built once, when a caller reads them all)."""
        if len(self.names) == 1:
            return self.names * len(self.codes)
        return tuple(self.names[c] for c in self.codes.tolist())

    @classmethod
    def renumbered(cls, names: Sequence[Any], codes: np.ndarray) -> Categories:
        """From codes into ``names`` in any order: the names sorted, the codes to match."""
        order = sorted(range(len(names)), key=lambda i: _none_first(names[i]))
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        return cls(tuple(names[i] for i in order), rank[codes])

    @classmethod
    def of(cls, values: Sequence[Any]) -> Categories:
        numbering = ValueCodes()
        return numbering.categories(numbering.of(values))


class ValueCodes:
    """Distinct values numbered as they first come, over one batch of values or many; the
    codes are renumbered in sorted order when they become ``Categories``."""

    def __init__(self) -> None:
        self.found: dict[Any, int] = {}

    def of(self, values: Sequence[Any]) -> np.ndarray:
        found = self.found
        distinct = set(values)
        if len(distinct) == 1:  # most batches: one latency column, file, semantic key
            return np.full(len(values), found.setdefault(next(iter(distinct)), len(found)),
                           dtype=np.int64)
        return np.array([found.setdefault(v, len(found)) for v in values], dtype=np.int64)

    def categories(self, codes: np.ndarray) -> Categories:
        return Categories.renumbered(list(self.found), codes)


@dataclass(frozen=True)
class RegimeSlice:
    """Every point of one (profile, kernel, path, regime) in point order: axes NULL first,
    then latency column, latency and point id (the order of the coordinate index before
    schema 0005, the same on every backend)."""

    axes: np.ndarray
    """Points × axes, each point's present axes packed to the left."""
    latency: np.ndarray
    sample_ids: np.ndarray
    columns: Categories
    """Each point's latency column (names sorted: the order points are sorted in)."""
    line_nos: np.ndarray
    files: Categories
    """Each point's kernel file name."""
    semantic: Categories

    def __len__(self) -> int:
        return len(self.latency)

    @property
    def column_codes(self) -> np.ndarray:
        return self.columns.codes

    @property
    def column_names(self) -> tuple[str, ...]:
        return self.columns.names

    @property
    def semantics(self) -> tuple[str | None, ...]:
        return self.semantic.values

    def row(self, i: int) -> MeasuredRow:
        return MeasuredRow(int(self.sample_ids[i]), float(self.latency[i]), self.columns[i],
                           int(self.line_nos[i]), self.files[i],
                           tuple(self.axes[i].tolist()), self.semantic[i])

    @cached_property
    def rows(self) -> tuple[MeasuredRow, ...]:
        """Every point as a measured row (hold-out truth reads them all)."""
        return tuple(self.row(i) for i in range(len(self)))

    def rows_at(self, target: Sequence[float], exclude: frozenset[int]) -> list[MeasuredRow]:
        """The rows at one coordinate (its leading axes), in point order."""
        n, width = len(target), self.axes.shape[1]
        if n > width:
            return []
        if n == 1:
            at = (self.axes[:, 0] == float(target[0])).nonzero()[0].tolist()
        else:
            same = self.axes[:, :n] == np.asarray(target, dtype=float)
            at = same.all(axis=1).nonzero()[0].tolist()
        rows = [self.row(i) for i in at]
        return [r for r in rows if r.sample_id not in exclude] if exclude else rows


    def without(self, exclude: frozenset[int]) -> RegimeSlice:
        """The slice with the points of these samples left out (hold-out)."""
        keep = np.flatnonzero(~np.isin(self.sample_ids, list(exclude)))
        return RegimeSlice(self.axes[keep], self.latency[keep], self.sample_ids[keep],
                           self.columns.take(keep), self.line_nos[keep],
                           self.files.take(keep), self.semantic.take(keep))


@dataclass(frozen=True)
class PointColumns:
    """Points column by column, in any order, of one regime or of many (``regime``: each
    point's regime id): what ``slices_of`` sorts and splits."""

    regime: np.ndarray
    sample_ids: np.ndarray
    latency: np.ndarray
    columns: Categories
    line_nos: np.ndarray
    files: Categories
    coords: np.ndarray
    """Axes × points, NaN for a NULL axis."""
    semantic: Categories
    point: np.ndarray
    """The last tie-break: the points' order in ``sample_point`` (its ids)."""

    @classmethod
    def of_rows(cls, fetched_rows: Sequence[Sequence[Any]],
                regime_ids: Sequence[int] | None = None) -> PointColumns:
        """From point rows (``point_rows``' columns after the regime id) of one regime, or
        of the regime each of ``regime_ids`` names."""
        (sample_ids, latency, columns, lines, files, axis_0, axis_1, axis_2, semantic,
         point_ids) = zip(*fetched_rows)
        regimes = np.zeros(len(fetched_rows), dtype=np.int64) if regime_ids is None else \
            np.array(regime_ids, dtype=np.int64)
        return cls(regimes,
                   np.array(sample_ids, dtype=np.int64), np.array(latency, dtype=float),
                   Categories.of(columns), np.array(lines, dtype=np.int64),
                   Categories.of(files), np.array([axis_0, axis_1, axis_2], dtype=float),
                   Categories.of(semantic), np.array(point_ids, dtype=np.int64))


def slices_of(points: PointColumns) -> Iterator[tuple[int, RegimeSlice]]:
    """(regime id, slice) of every regime among ``points``, by regime id: every regime's
    points sorted in one pass, each slice's arrays views of the sorted columns."""
    null_first = np.where(np.isnan(points.coords), -np.inf, points.coords)
    order = np.lexsort((points.point, points.latency, points.columns.codes,
                        *null_first[::-1], points.regime))
    regimes = points.regime[order]
    starts = np.concatenate(([0], np.flatnonzero(regimes[1:] != regimes[:-1]) + 1))
    bounds = list(zip(starts.tolist(), [*starts[1:].tolist(), len(order)]))
    coords, latency = points.coords[:, order], points.latency[order]
    sample_ids, line_nos = points.sample_ids[order], points.line_nos[order]
    widths = _leading_widths(coords, starts)
    kinds = (points.columns, points.files, points.semantic)
    codes = [kind.codes[order] for kind in kinds]
    singles = [_single_codes(c, starts) for c in codes]
    for n, (start, end) in enumerate(bounds):
        width = widths[n]
        axes = (coords[:width, start:end].T if width is not None
                else _packed_axes(coords[:, start:end]))
        columns, files, semantic = (kind.local(c[start:end], single[n])
                                    for kind, c, single in zip(kinds, codes, singles))
        yield int(regimes[start]), RegimeSlice(
            axes, latency[start:end], sample_ids[start:end], columns, line_nos[start:end],
            files, semantic)


def _leading_widths(coords: np.ndarray, starts: np.ndarray) -> list[int | None]:
    """Per run of points beginning at ``starts``: how many axes each of its points has when
    they all have the same leading ones (then the run's axes are ``coords[:width]``), else
    None (``_packed_axes`` packs them point by point)."""
    present = ~np.isnan(coords)
    count = present.sum(axis=0)
    leading = np.all(present[:-1] >= present[1:], axis=0)  # no axis after a missing one
    low, high = np.minimum.reduceat(count, starts), np.maximum.reduceat(count, starts)
    regular = np.minimum.reduceat(leading, starts)
    return [int(h) if lo == h and ok else None
            for lo, h, ok in zip(low.tolist(), high.tolist(), regular.tolist())]


def _single_codes(codes: np.ndarray, starts: np.ndarray) -> list[int | None]:
    """Per run of ``codes`` beginning at ``starts``: its one code, or None when it holds
    several (one pass for every regime, not two reductions per regime)."""
    low, high = np.minimum.reduceat(codes, starts), np.maximum.reduceat(codes, starts)
    return [int(lo) if lo == hi else None for lo, hi in zip(low.tolist(), high.tolist())]


def build_slice(fetched_rows: Sequence[Sequence[Any]]) -> RegimeSlice:
    """A slice from point rows (``point_rows``' columns after the regime id) in any order."""
    if not fetched_rows:
        empty = np.empty(0)
        none = Categories((), np.empty(0, dtype=np.int64))
        return RegimeSlice(empty.reshape(0, 0), empty, np.empty(0, dtype=np.int64), none,
                           np.empty(0, dtype=np.int64), none, none)
    return next(slices_of(PointColumns.of_rows(fetched_rows)))[1]


def _packed_axes(coords: np.ndarray) -> np.ndarray:
    """Points × axes, each point's present (non-NULL) axes packed to the left, point by
    point (a run whose points share their leading axes is a view: ``_leading_widths``)."""
    width = int((~np.isnan(coords)).sum(axis=0).max())
    packed = [[v for v in point if v == v] for point in coords.T.tolist()]
    return np.array(packed, dtype=float).reshape(len(packed), width)
