"""A regime's measured points column by column, in point order, as arrays.

A regime can hold hundreds or thousands of points while an answer names two to four of
them, so a slice keeps one array per column (numpy; a column with few distinct values, such
as the latency column, as the values and a code per point) and builds a ``MeasuredRow``
(with its file name and line) only for the rows an answer or an exact lookup reports. A
slice is built from fetched point rows (``build_slice``) or read whole from its stored pack
(``profstore.regime_pack``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

AXES = 3
"""Coordinate columns of a point (``sample_point.axis_0..2``)."""
SAMPLE, LATENCY, COLUMN, LINE, FILE, AXIS, SEMANTIC, POINT = 0, 1, 2, 3, 4, 5, 8, 9
"""Positions in a fetched point row: sample id, latency, latency column, line, kernel file
name, three axes, semantic key, point id (what ``profstore.ingest.packs`` reads)."""


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

    @cached_property
    def values(self) -> tuple[Any, ...]:
        """Every point's value (built once, when a caller reads them all)."""
        if len(self.names) == 1:
            return self.names * len(self.codes)
        return tuple(self.names[c] for c in self.codes.tolist())

    @classmethod
    def of(cls, values: Sequence[Any]) -> Categories:
        names = tuple(sorted(set(values), key=_none_first))
        if len(names) <= 1:
            return cls(names, np.zeros(len(values), dtype=np.int64))
        code_of = {name: i for i, name in enumerate(names)}
        return cls(names, np.array([code_of[v] for v in values], dtype=np.int64))


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
        if n == width and self._asked_before():
            at = self._at.get(tuple(float(v) for v in target), [])
        elif n == 1:
            at = np.flatnonzero(self.axes[:, 0] == float(target[0])).tolist()
        else:
            same = self.axes[:, :n] == np.asarray(target, dtype=float)
            at = np.flatnonzero(np.all(same, axis=1)).tolist()
        rows = [self.row(i) for i in at]
        return [r for r in rows if r.sample_id not in exclude] if exclude else rows

    def _asked_before(self) -> bool:
        """Whether a full coordinate was asked of this slice before: the first is found by
        a scan (a slice read for one target does not build the index below), the later
        ones by the index (a cached slice's targets are then one dict read)."""
        asked = self.__dict__.get("_asked", False)
        self.__dict__["_asked"] = True
        return asked

    @cached_property
    def _at(self) -> dict[tuple[float, ...], list[int]]:
        """Point indices by full coordinate."""
        found: dict[tuple[float, ...], list[int]] = {}
        for i, point in enumerate(map(tuple, self.axes.tolist())):
            found.setdefault(point, []).append(i)
        return found

    def without(self, exclude: frozenset[int]) -> RegimeSlice:
        """The slice with the points of these samples left out (hold-out)."""
        keep = np.flatnonzero(~np.isin(self.sample_ids, list(exclude)))
        return RegimeSlice(self.axes[keep], self.latency[keep], self.sample_ids[keep],
                           self.columns.take(keep), self.line_nos[keep],
                           self.files.take(keep), self.semantic.take(keep))


def build_slice(fetched_rows: Sequence[Sequence[Any]]) -> RegimeSlice:
    """A slice from fetched point rows (``SAMPLE`` … ``POINT``) in any order (sorted here,
    once, in numpy)."""
    if not fetched_rows:
        empty = np.empty(0)
        none = Categories((), np.empty(0, dtype=np.int64))
        return RegimeSlice(empty.reshape(0, 0), empty, np.empty(0, dtype=np.int64), none,
                           np.empty(0, dtype=np.int64), none, none)
    raw = list(zip(*fetched_rows))
    coords = np.array(raw[AXIS:AXIS + AXES], dtype=float)  # NULL -> NaN, one row per axis
    columns = Categories.of(raw[COLUMN])
    latency = np.array(raw[LATENCY], dtype=float)
    null_first = np.where(np.isnan(coords), -np.inf, coords)
    order = np.lexsort((np.array(raw[POINT]), latency, columns.codes, *null_first[::-1]))
    return RegimeSlice(_packed_axes(coords[:, order]), latency[order],
                       np.array(raw[SAMPLE], dtype=np.int64)[order], columns.take(order),
                       np.array(raw[LINE], dtype=np.int64)[order],
                       Categories.of(raw[FILE]).take(order),
                       Categories.of(raw[SEMANTIC]).take(order))


def _packed_axes(coords: np.ndarray) -> np.ndarray:
    """Points × axes, each point's present (non-NULL) axes packed to the left."""
    present = ~np.isnan(coords)
    width = int(present.sum(axis=0).max())
    if present[:width].all():
        return np.ascontiguousarray(coords[:width].T)
    packed = [[v for v in point if v == v] for point in coords.T.tolist()]
    return np.array(packed, dtype=float).reshape(len(packed), width)
