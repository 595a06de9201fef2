"""One axis group's interpolation candidates, per latency column: the regime slice's points
that share the target's fixed axes, duplicates merged, in coordinate order.

Everything here works on the slice's arrays and point indices; a ``MeasuredRow`` is built
only for a coordinate measured more than once (``merge_coordinate`` reads rows) and for the
vertices an answer reports.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np
from profstore.geometry.line import Line
from profstore.lookup.duplicate_rows import merge_coordinate
from profstore.model.mapping import KernelPolicy
from profstore.paths.base import AxisTransform
from profstore.storage.regime_slice import MeasuredRow, RegimeSlice


class VertexReport(NamedTuple):
    """The parts of a vertex's report that do not depend on its weight."""

    provenance: dict[str, Any]
    axes: list[float] | None
    merged_rows: int
    merged_latency_us: float


Transforms = tuple[AxisTransform | None, ...]


@dataclass(frozen=True)
class Prepared:
    """One latency column's candidates for one axis group: merged coordinates and values,
    the representative point and row count of each coordinate, ambiguous rows left out."""

    column: str
    points: np.ndarray
    values: np.ndarray
    representatives: np.ndarray | list[int]
    """The slice index of each coordinate's representative row."""
    counts: list[int]
    ambiguous: int
    source: RegimeSlice = field(repr=False, compare=False)
    _vertices: dict[int, VertexReport] = field(default_factory=dict, init=False,
                                               compare=False, repr=False)
    _coords: dict[Transforms, np.ndarray] = field(default_factory=dict, init=False,
                                                  compare=False, repr=False)
    _lines: dict[Transforms, Line] = field(default_factory=dict, init=False, compare=False,
                                           repr=False)
    """Built on first use, read only afterwards: every target of the regime shares them."""

    def merged(self, i: int) -> tuple[MeasuredRow, int]:
        """Coordinate ``i``'s representative row and how many rows it merges."""
        return self.source.row(int(self.representatives[i])), self.counts[i]

    def vertex_row(self, i: int, weight: float) -> dict[str, Any]:
        """Coordinate ``i`` as an interpolation answer reports a vertex: its representative
        row's provenance, ``weight``, the rows merged and the merged latency. The parts
        that do not depend on the weight are made once per coordinate (every target of
        the regime between the same two points reports them); each call returns new
        dicts and lists."""
        found = self._vertices.get(i)
        if found is None:
            row, count = self.merged(i)
            provenance = row.provenance()
            axes = provenance.pop("axes", None)
            found = self._vertices[i] = VertexReport(provenance, axes, count,
                                                     float(self.values[i]))
        reported = dict(found.provenance)
        if found.axes is not None:
            reported["axes"] = list(found.axes)
        reported.update(weight=weight, merged_rows=found.merged_rows,
                        merged_latency_us=found.merged_latency_us)
        return reported

    def coords(self, transforms: Transforms) -> np.ndarray:
        found = self._coords.get(transforms)
        if found is None:
            found = self._coords[transforms] = _transform(self.points, transforms)
        return found

    def line(self, transforms: Transforms) -> Line:
        found = self._lines.get(transforms)
        if found is None:
            found = self._lines[transforms] = Line(self.coords(transforms)[:, 0], self.values)
        return found


class Candidates:
    """One axis group's candidate points per latency column, most preferred column first.
    A column's merged coordinates are built when the lookup first reaches it: an answer
    from the preferred column never merges the others."""

    def __init__(self, regime_slice: RegimeSlice, by_column: dict[str, np.ndarray],
                 group: tuple[int, ...], semantic: str | None, policy: KernelPolicy) -> None:
        rank = policy.column_rank
        self.columns = sorted(by_column, key=lambda c: rank.get(c, len(rank)))
        self._slice, self._points, self._group = regime_slice, by_column, group
        self._semantic, self._policy = semantic, policy
        self._made: dict[str, Prepared] = {}

    @classmethod
    def of(cls, regime_slice: RegimeSlice, group: tuple[int, ...],
           fixed: Sequence[tuple[int, float]], semantic: str | None,
           policy: KernelPolicy) -> Candidates:
        """The slice's points whose fixed axes equal the target's, split by latency column."""
        if fixed:
            mask = regime_slice.axes[:, fixed[0][0]] == fixed[0][1]
            for i, value in fixed[1:]:
                mask &= regime_slice.axes[:, i] == value
            chosen = np.flatnonzero(mask)
            codes = regime_slice.column_codes[chosen]
        else:
            codes = regime_slice.column_codes
        split = []
        for code, name in enumerate(regime_slice.column_names):
            where = (codes == code).nonzero()[0]
            if len(where):
                split.append((int(where[0]), name, chosen[where] if fixed else where))
        split.sort(key=itemgetter(0))  # equal ranks: first seen, first
        return cls(regime_slice, {name: points for _, name, points in split}, group, semantic,
                   policy)

    def __len__(self) -> int:
        return len(self.columns)

    def __iter__(self) -> Iterator[Prepared]:
        for column in self.columns:
            made = self._made.get(column)
            if made is None:
                made = self._made[column] = Prepared(column, *merge_points(
                    self._slice, self._points[column], self._group, self._semantic,
                    self._policy.column_rank, self._policy.require_semantic_unique),
                    source=self._slice)
            yield made


def merge_points(
    regime_slice: RegimeSlice, chosen: np.ndarray, group: Sequence[int], semantic: str | None,
    rank: Mapping[str, int], unique_required: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | list[int], list[int], int]:
    """Candidate coordinates of one column's points (slice indices in point order) with
    duplicates merged (median) or, when the kernel requires unique rows and they disagree,
    left out: (coordinates, values, representatives, counts, ambiguous rows)."""
    if semantic is not None:
        semantics = regime_slice.semantics
        chosen = chosen[[semantics[i] == semantic for i in chosen.tolist()]]
    ascending = _ascending_line(regime_slice, chosen, group)
    if ascending is not None:
        coordinates, same = ascending
    else:
        coordinates = regime_slice.axes[np.ix_(chosen, np.asarray(group, dtype=np.intp))]
        order = np.lexsort(coordinates.T[::-1]) if len(chosen) else np.empty(0, dtype=np.int64)
        coordinates, chosen = coordinates[order], chosen[order]
        same = (coordinates[1:] == coordinates[:-1]).all(axis=1)
    if same is None or not same.any():
        return coordinates, regime_slice.latency[chosen], chosen, [1] * len(chosen), 0
    return _merge_duplicates(regime_slice, chosen, coordinates, same, semantic, rank,
                             unique_required)


def _ascending_line(regime_slice: RegimeSlice, chosen: np.ndarray, group: Sequence[int]
                    ) -> tuple[np.ndarray, np.ndarray | None] | None:
    """For one axis already in ascending order (a slice is sorted by its first axis, so a
    1-D regime's candidates are), the coordinates as a column and where each equals the
    one before (None when none does); None otherwise (the stable sort would leave an
    ascending axis as it is)."""
    if len(group) != 1:
        return None
    line = regime_slice.axes[chosen, group[0]]
    later, earlier = line[1:], line[:-1]
    column = line.reshape(len(line), 1)
    if (later > earlier).all():
        return column, None
    if not (later >= earlier).all():
        return None
    return column, later == earlier


def _merge_duplicates(
    regime_slice: RegimeSlice, chosen: np.ndarray, coordinates: np.ndarray, same: np.ndarray,
    semantic: str | None, rank: Mapping[str, int], unique_required: bool,
) -> tuple[np.ndarray, np.ndarray, list[int], list[int], int]:
    """``merge_points`` for sorted points of which some share a coordinate (a stable sort
    keeps a coordinate's points in point order)."""
    starts = np.flatnonzero(np.concatenate(([True], ~same))).tolist()
    ends = [*starts[1:], len(chosen)]
    indices, latency = chosen.tolist(), regime_slice.latency
    points, values, representatives, counts, ambiguous = [], [], [], [], 0
    for start, end in zip(starts, ends):
        if end - start == 1:
            points.append(start)
            values.append(float(latency[indices[start]]))
            representatives.append(indices[start])
            counts.append(1)
            continue
        members = indices[start:end]
        rows = [regime_slice.row(i) for i in members]
        outcome = merge_coordinate(rows, rank, unique_required=unique_required,
                                   semantic=semantic)
        ambiguous += outcome.ambiguous
        if outcome.merged is None:
            continue
        points.append(start)
        values.append(outcome.merged.latency_us)
        first = outcome.merged.rows[0]
        representatives.append(next(i for i, r in zip(members, rows) if r is first))
        counts.append(len(outcome.merged.rows))
    width = coordinates.shape[1]
    return (coordinates[points].reshape(len(points), width), np.array(values, dtype=float),
            representatives, counts, ambiguous)


def _transform(points: np.ndarray, transforms: Sequence) -> np.ndarray:
    """The points with each axis transformed, as floats (the points themselves when no
    axis is: neither is written after it is made)."""
    if not any(transforms):
        return np.asarray(points, dtype=float)
    out = np.array(points, dtype=float, copy=True)
    for j, fn in enumerate(transforms):
        if fn is not None:
            out[:, j] = [fn(v) for v in out[:, j]]
    return out
