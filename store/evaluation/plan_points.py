"""Shapes to profile for one gap leaf: grid points that bracket its coordinate.

A leaf's target is its path's own extraction (regime + axes). The points proposed for it
lie on the kernel's grid — the distinct values each axis already takes in the kernel's
rows of that path, any regime — so a collection run densifies the grid the profiler
uses: per axis of the path's lowest-dimension axis group, the largest grid value at or
below the target and the smallest at or above (the target itself when it is a grid
value, or when nothing lies beyond it); the other axes stay at the target's values.
Coordinates the regime already measures are not proposed again.

A point becomes a leaf by putting the new axis value in place of the target's value in
every tensor dimension that carries it; it is kept only when the path reads back the same
regime and exactly that coordinate, from the leaf (``target_regime``) and from the CSV
row written for it (``row_regime``, the ingest side). A bracket that fails the check
falls back to the target itself; a target that fails it has no CSV form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from profstore.ingest.csvfile import read_kernel_csv
from profstore.ingest.profiling_folders import Row, csv_text
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.leaf import LeafOp
from profstore.model.mapping import KernelPolicy, MappingEntry, VersionMapping
from profstore.model.tensor_spec import TensorSpec
from profstore.paths.base import Extraction, OperatorPath, Refusal, RowContext, TargetContext
from profstore.paths.registry import tc_input_counts

Coordinate = tuple[float, ...]


@dataclass(frozen=True)
class Target:
    """A gap leaf as its path sees it."""

    leaf: LeafOp
    entry: MappingEntry
    kernel: str
    path: OperatorPath
    policy: KernelPolicy
    extraction: Extraction

    @property
    def context(self) -> TargetContext:
        return TargetContext(self.entry, self.kernel, self.policy)


@dataclass(frozen=True)
class ProposedPoint:
    coordinate: Coordinate
    role: str
    """``target`` (the leaf's own shape), ``low`` / ``high`` (grid neighbours)."""
    row: Row


def bracket(value: float, grid: Sequence[float]) -> tuple[float, float]:
    """The grid neighbours of ``value``: (largest <= value, smallest >= value). Past either
    end of the grid the neighbour is the nearest power of two on that side (the value
    itself when it is one), so the target ends up inside, not on the edge."""
    below = [g for g in grid if g <= value]
    above = [g for g in grid if g >= value]
    low = max(below) if below else (2.0 ** math.floor(math.log2(value)) if value >= 1
                                    else value)
    high = min(above) if above else (2.0 ** math.ceil(math.log2(value)) if value >= 1
                                     else value)
    return low, high


def candidate_coordinates(target: Coordinate, group: Sequence[int],
                          grids: Mapping[int, Sequence[float]]) -> list[tuple[Coordinate, str]]:
    """Bracketing coordinates along each axis of ``group`` (the others at the target)."""
    found: dict[Coordinate, str] = {}
    for axis in group:
        low, high = bracket(target[axis], grids.get(axis, ()))
        for value, role in ((low, "low"), (high, "high")):
            point = tuple(value if j == axis else v for j, v in enumerate(target))
            found.setdefault(point, "target" if point == target else role)
    return sorted(found.items())


def substitute(leaf: LeafOp, old: float, new: float) -> LeafOp:
    """``leaf`` with every tensor dimension equal to ``old`` set to ``new``."""
    if old == new:
        return leaf
    def fix(tensor: TensorSpec) -> TensorSpec:
        return replace(tensor, shape=tuple(int(new) if d == old else d for d in tensor.shape))
    args = tuple(_map_tensors(a, fix) for a in leaf.args)
    return replace(leaf, args=args, outputs=tuple(fix(o) for o in leaf.outputs))


def _map_tensors(value: Any, fix: Any) -> Any:
    if isinstance(value, TensorSpec):
        return fix(value)
    if isinstance(value, tuple):
        return tuple(_map_tensors(v, fix) for v in value)
    return value


def csv_row(leaf: LeafOp, latency_us: float) -> Row:
    """The leaf's tensors as a profiler CSV row (profiler dtype names, formats kept)."""
    inputs, outputs = leaf.tensor_inputs(), leaf.outputs
    return Row([list(t.shape) for t in inputs], [to_profiler_dtype(t.dtype) for t in inputs],
               [list(t.shape) for t in outputs], [to_profiler_dtype(t.dtype) for t in outputs],
               latency=round(latency_us, 6), formats=[t.format or "ND" for t in inputs],
               out_formats=[t.format or "ND" for t in outputs])


def _same(extraction: Extraction | Refusal, regime: str, coordinate: Coordinate) -> bool:
    return (isinstance(extraction, Extraction) and extraction.regime_key == regime
            and len(extraction.axes) == len(coordinate)
            and all(math.isclose(a, c, rel_tol=1e-9) for a, c in zip(extraction.axes,
                                                                       coordinate)))


def row_reads_as(row: Row, target: Target, mapping: VersionMapping, coordinate: Coordinate
                 ) -> bool:
    """Whether ingest would read ``row`` as the target's regime at ``coordinate``."""
    policy = mapping.policy(target.kernel)
    readout = read_kernel_csv(csv_text([row]).encode(), target.kernel, policy)
    if len(readout.accepted) != 1:
        return False
    ctx = RowContext(target.kernel, policy, tc_input_counts(target.kernel, mapping),
                     tuple(mapping.entries_for_kernel(target.kernel)))
    read = target.path.row_regime(readout.accepted[0].row, ctx)
    if isinstance(read, Refusal):
        return False
    return any(_same(e, target.extraction.regime_key, coordinate) for e in read)


def leaf_at(target: Target, coordinate: Coordinate) -> LeafOp | None:
    """The target leaf moved to ``coordinate``, when the path reads it back there."""
    leaf = target.leaf
    for old, new in zip(target.extraction.axes, coordinate):
        leaf = substitute(leaf, old, new)
    read = target.path.target_regime(leaf, target.context)
    return leaf if _same(read, target.extraction.regime_key, coordinate) else None


def propose(target: Target, mapping: VersionMapping,
            grids: Mapping[int, Sequence[float]], measured: set[Coordinate],
            latency_us: float) -> list[ProposedPoint] | None:
    """The points that cover ``target`` (None: no CSV form the path reads back)."""
    axes = target.extraction.axes
    groups = target.path.groups_for(target.extraction)
    group = groups[0] if groups else tuple(range(len(axes)))
    chosen: list[ProposedPoint] = []
    fallback = False
    for coordinate, role in candidate_coordinates(axes, group, grids):
        if coordinate in measured:
            continue
        leaf = leaf_at(target, coordinate)
        row = None if leaf is None else csv_row(leaf, latency_us)
        if row is None or not row_reads_as(row, target, mapping, coordinate):
            fallback = True
            continue
        chosen.append(ProposedPoint(coordinate, role, row))
    if fallback and axes not in measured and all(p.coordinate != axes for p in chosen):
        row = csv_row(target.leaf, latency_us)
        if not row_reads_as(row, target, mapping, axes):
            return None
        chosen = [ProposedPoint(axes, "target", row)]
    return chosen
