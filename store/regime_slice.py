"""A regime's measured points column by column: what the candidate statements fetch, in
point order, as arrays.

A regime can hold hundreds or thousands of points while an answer names two to four of
them, so a slice keeps the fetched columns as they come (one tuple per column, numpy for
the coordinates, latencies and sample ids) and builds a ``MeasuredRow`` (with its file
name and line) only for the rows an answer or an exact lookup reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any, NamedTuple, Protocol

import numpy as np

AXES = 3
"""Coordinate columns of a point (``sample_point.axis_0..2``)."""
SAMPLE, LATENCY, COLUMN, LINE, FILE, AXIS, SEMANTIC, POINT = 0, 1, 2, 3, 4, 5, 8, 9
"""Positions in a fetched point row: sample id, latency, latency column, line, kernel file
id, three axes, semantic key, point id (``candidates._point_select``)."""


class FileNameLookup(Protocol):
    """Kernel file id -> file name (a dict, or ``candidates.FileNames`` reading on demand)."""

    def __getitem__(self, file_id: int, /) -> str: ...


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


@dataclass(frozen=True)
class RegimeSlice:
    """Every point of one (profile, kernel, path, regime) in point order: axes NULL first,
    then latency column, latency and point id (the order of the coordinate index before
    schema 0005, the same on every backend)."""

    fetched: tuple[tuple[Any, ...], ...]
    """The fetched columns (``SAMPLE`` … ``POINT``), each a tuple in point order."""
    axes: np.ndarray
    latency: np.ndarray
    sample_ids: np.ndarray
    column_codes: np.ndarray
    """Each point's latency column as an index into ``column_names`` (sorted names)."""
    column_names: tuple[str, ...]
    file_names: FileNameLookup = field(repr=False)

    def __len__(self) -> int:
        return len(self.latency)

    @property
    def semantics(self) -> tuple[str | None, ...]:
        return self.fetched[SEMANTIC]

    def row(self, i: int) -> MeasuredRow:
        f = self.fetched
        axes = tuple(float(v) for v in (f[AXIS][i], f[AXIS + 1][i], f[AXIS + 2][i])
                     if v is not None)
        return MeasuredRow(f[SAMPLE][i], f[LATENCY][i], f[COLUMN][i], f[LINE][i],
                           self.file_names[f[FILE][i]], axes, f[SEMANTIC][i])

    @cached_property
    def rows(self) -> tuple[MeasuredRow, ...]:
        """Every point as a measured row (hold-out truth reads them all)."""
        return tuple(self.row(i) for i in range(len(self)))

    def rows_at(self, target: Sequence[float], exclude: frozenset[int]) -> list[MeasuredRow]:
        """The rows at one coordinate (its leading axes), in point order."""
        n, width = len(target), self.axes.shape[1]
        if n > width:
            return []
        if n == width:
            at = self._at.get(tuple(float(v) for v in target), [])
        else:
            same = self.axes[:, :n] == np.asarray(target, dtype=float)
            at = np.flatnonzero(np.all(same, axis=1)).tolist()
        rows = [self.row(i) for i in at]
        return [r for r in rows if r.sample_id not in exclude] if exclude else rows

    @cached_property
    def _at(self) -> dict[tuple[float, ...], list[int]]:
        """Point indices by full coordinate, built on the first exact lookup of a cached
        slice (the regime's later targets are then one dict read)."""
        found: dict[tuple[float, ...], list[int]] = {}
        for i, point in enumerate(map(tuple, self.axes.tolist())):
            found.setdefault(point, []).append(i)
        return found

    def without(self, exclude: frozenset[int]) -> RegimeSlice:
        """The slice with the points of these samples left out (hold-out)."""
        keep = np.flatnonzero(~np.isin(self.sample_ids, list(exclude)))
        return RegimeSlice(_reordered(self.fetched, keep), self.axes[keep], self.latency[keep],
                           self.sample_ids[keep], self.column_codes[keep], self.column_names,
                           self.file_names)


def build_slice(fetched_rows: Sequence[Sequence[Any]], file_names: FileNameLookup
                ) -> RegimeSlice:
    """A slice from fetched point rows in any order (sorted here, once, in numpy)."""
    if not fetched_rows:
        empty = np.empty(0)
        return RegimeSlice(((),) * (POINT + 1), empty.reshape(0, 0), empty,
                           np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), (),
                           file_names)
    raw = list(zip(*fetched_rows))
    coords = np.array(raw[AXIS:AXIS + AXES], dtype=float)  # NULL -> NaN, one row per axis
    names = tuple(sorted(set(raw[COLUMN])))
    code_of = {name: i for i, name in enumerate(names)}
    codes = (np.zeros(len(fetched_rows), dtype=np.int64) if len(names) == 1 else
             np.array([code_of[c] for c in raw[COLUMN]], dtype=np.int64))
    latency = np.array(raw[LATENCY], dtype=float)
    null_first = np.where(np.isnan(coords), -np.inf, coords)
    order = np.lexsort((np.array(raw[POINT]), latency, codes, *null_first[::-1]))
    fetched = _reordered(raw, order)
    return RegimeSlice(fetched, _packed_axes(coords[:, order]), latency[order],
                       np.array(fetched[SAMPLE], dtype=np.int64), codes[order], names,
                       file_names)


def _reordered(columns: Sequence[tuple[Any, ...]], order: np.ndarray
               ) -> tuple[tuple[Any, ...], ...]:
    """Each column with its items picked in ``order``."""
    if len(order) == 0:
        return tuple(() for _ in columns)
    if len(order) == 1:
        return tuple((col[int(order[0])],) for col in columns)
    pick = itemgetter(*order.tolist())
    return tuple(pick(col) for col in columns)


def _packed_axes(coords: np.ndarray) -> np.ndarray:
    """Points × axes, each point's present (non-NULL) axes packed to the left."""
    present = ~np.isnan(coords)
    width = int(present.sum(axis=0).max())
    if present[:width].all():
        return np.ascontiguousarray(coords[:width].T)
    packed = [[v for v in point if v == v] for point in coords.T.tolist()]
    return np.array(packed, dtype=float).reshape(len(packed), width)
