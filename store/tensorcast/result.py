"""The result TensorCast reads: a ``QueryResult`` plus upstream's shape debug fields.

TensorCast's consumers (``EmpiricalPerformanceModel``, ``MetricsCollector``, the chrome
trace) read, besides latency, source and confidence:

- ``details["kernel_type"]`` and ``details["zero_cost"]`` (zero-cost and accepted-miss
  answers are excluded from the fused-op metrics by that flag; the wrapper sets both);
- ``details["missed_kernels"]`` on a PARTIAL result;
- ``shape_debug_statistics()``, merged into the op's statistics: for a composite the
  ``sub_kernel_shapes`` JSON list, otherwise ``kernel_shapes`` (the matched CSV row's input
  shapes as text, ``""`` when none) and ``shape_match_rule``;
- ``shape_match_info`` / ``sub_kernel_shapes`` themselves, with upstream's field names.

The shape match rule is profstore's lookup method (``base_exact``, ``exact_coordinate``,
``linear_1d``, ``zero_cost``, ...). The kernel shapes are those of the matched row; for an
interpolation, the vertex with the largest weight.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult

ShapeList = list[list[int]]
RowShapes = Callable[[str, int], ShapeList]
"""(file, line) of a matched row → its input shapes ([] when unknown)."""


@dataclass(frozen=True)
class ShapeMatchInfo:
    """Shape debug info of one lookup (upstream's field names)."""

    simulation_shapes: ShapeList
    kernel_shapes: ShapeList
    shape_match_rule: str


@dataclass(frozen=True)
class SubKernelShapeInfo:
    """Shape debug info of one sub-kernel of a composite (upstream's field names)."""

    kernel_type: str
    simulation_shapes: ShapeList
    kernel_shapes: ShapeList
    shape_match_rule: str


COMPACT_KEYS = ("kernel_type", "method", "zero_cost", "accepted_miss", "missed_kernels")
"""What TensorCast's consumers read of ``details`` (above), and the method that names the
answer: all a compact answer hands over."""


@dataclass(frozen=True)
class TensorCastResult(QueryResult):
    """A ``QueryResult`` with the shape debug fields TensorCast's model reads.

    A compact result's ``details`` hold only ``COMPACT_KEYS``: TensorCast merges them into
    every op's statistics, and its bound classifier then walks every key of them for every
    call of the op (docs/adr/0004). ``all_details`` is the whole record either way."""

    shape_match_info: ShapeMatchInfo | None = None
    sub_kernel_shapes: list[SubKernelShapeInfo] | None = None
    full_details: dict[str, Any] | None = None

    @property
    def all_details(self) -> dict[str, Any]:
        return self.details if self.full_details is None else self.full_details

    @classmethod
    def of(cls, result: QueryResult, leaf: LeafOp | None = None,
           row_shapes: RowShapes | None = None, compact: bool = False) -> TensorCastResult:
        """``result`` with its shape debug info (kernel shapes need ``row_shapes``); with
        ``compact``, its details cut to ``COMPACT_KEYS`` (the rest in ``full_details``)."""
        shapes_of = row_shapes or _no_shapes
        simulation = simulation_shapes(leaf) if leaf is not None else []
        details = result.details
        info, subs = None, None
        if details.get("method") == "composite_sum":
            subs = _sub_kernels(details, simulation, shapes_of)
        else:
            kernel = [] if details.get("selector") == "communication" else _row_shapes(
                details.get("matched_rows", ()), shapes_of)
            info = ShapeMatchInfo(simulation, kernel, str(details.get("method") or "unknown"))
        if not compact:
            return cls(result.latency_us, result.source, result.confidence, result.reason,
                       details, info, subs)
        handed = {key: details[key] for key in COMPACT_KEYS if key in details}
        return cls(result.latency_us, result.source, result.confidence, result.reason,
                   handed, info, subs, details)

    def shape_debug_statistics(self) -> dict[str, Any]:
        """What TensorCast merges into the op's statistics (upstream's keys and spelling)."""
        if self.sub_kernel_shapes is not None:
            return {"sub_kernel_shapes": json.dumps([
                {"kernel_type": sk.kernel_type, "simulation_shapes": str(sk.simulation_shapes),
                 "kernel_shapes": str(sk.kernel_shapes), "shape_match_rule": sk.shape_match_rule}
                for sk in self.sub_kernel_shapes])}
        if self.shape_match_info is not None:
            info = self.shape_match_info
            return {"kernel_shapes": str(info.kernel_shapes) if info.kernel_shapes else "",
                    "shape_match_rule": info.shape_match_rule}
        method = self.details.get("method")
        return {"shape_match_rule": method} if method else {}


def simulation_shapes(leaf: LeafOp) -> ShapeList:
    """The leaf's non-scalar tensor inputs, lists flattened (what upstream reports)."""
    return [list(t.shape) for t in leaf.tensor_inputs() if t.rank > 0]


def _no_shapes(file_name: str, line_no: int) -> ShapeList:
    return []


def _row_shapes(rows: Sequence[Mapping[str, Any]], shapes_of: RowShapes) -> ShapeList:
    """Input shapes of the matched row, the heaviest vertex of an interpolation."""
    if not rows:
        return []
    row = max(rows, key=lambda r: float(r.get("weight", 1.0)))
    file_name, line = row.get("file"), row.get("line")
    if not isinstance(file_name, str) or not isinstance(line, int):
        return []
    return shapes_of(file_name, line)


def _sub_kernels(details: Mapping[str, Any], simulation: ShapeList,
                 shapes_of: RowShapes) -> list[SubKernelShapeInfo]:
    methods = details.get("part_methods", {})
    rows = details.get("part_rows", {})
    missed = details.get("missed_kernels", {})
    found = []
    for kernel in details.get("sub_kernels", ()):
        if kernel in missed:
            found.append(SubKernelShapeInfo(kernel, simulation, [], str(missed[kernel])))
            continue
        shapes = [] if kernel.startswith("hcom_") else _row_shapes(rows.get(kernel, ()),
                                                                    shapes_of)
        found.append(SubKernelShapeInfo(kernel, simulation, shapes,
                                        str(methods.get(kernel) or "unknown")))
    return found
