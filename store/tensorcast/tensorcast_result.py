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
from dataclasses import dataclass, replace
from typing import Any

from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult

ShapeList = list[list[int]]
RowShapes = Callable[[str, int], ShapeList]
"""(file, line) of a matched row → its input shapes ([] when unknown)."""


@dataclass(frozen=True)
class ShapeMatchInfo:
    """Shape debug info of one lookup (upstream's field names).

    Examples:
        >>> from profstore.tensorcast import ShapeMatchInfo
        >>> info = ShapeMatchInfo([[200, 7168]], [[128, 7168]], "linear_1d")
        >>> info.shape_match_rule
        'linear_1d'
    """

    simulation_shapes: ShapeList
    """The leaf's non-scalar tensor inputs' shapes."""
    kernel_shapes: ShapeList
    """The matched row's input shapes (for an interpolation, the heaviest vertex's);
    ``[]`` when none."""
    shape_match_rule: str
    """profstore's lookup method (``base_exact``, ``linear_1d``, ...), or the miss code."""


@dataclass(frozen=True)
class SubKernelShapeInfo:
    """Shape debug info of one sub-kernel of a composite (upstream's field names).

    Examples:
        >>> from profstore.tensorcast import SubKernelShapeInfo
        >>> part = SubKernelShapeInfo("MatMulV2", [[8, 7168]], [[8, 7168]], "base_exact")
        >>> part.kernel_type, part.shape_match_rule
        ('MatMulV2', 'base_exact')
    """

    kernel_type: str
    """The sub-kernel."""
    simulation_shapes: ShapeList
    """The composite leaf's non-scalar tensor inputs' shapes."""
    kernel_shapes: ShapeList
    """The sub-kernel's matched row's input shapes; ``[]`` when none (or missed)."""
    shape_match_rule: str
    """The sub-kernel's lookup method, or its miss reason."""


COMPACT_KEYS = ("kernel_type", "method", "zero_cost", "accepted_miss", "missed_kernels")
"""What TensorCast's consumers read of ``details`` (above), and the method that names the
answer: all a compact answer hands over."""


@dataclass(frozen=True)
class TensorCastResult(QueryResult):
    """A ``QueryResult`` with the shape debug fields TensorCast's model reads.

    A compact result's ``details`` hold only ``COMPACT_KEYS``: TensorCast merges them into
    every op's statistics, and its bound classifier then walks every key of them for every
    call of the op (docs/adr/0004). ``all_details`` is the whole record either way.

    Examples:
        >>> from profstore import QueryResult
        >>> from profstore.tensorcast import TensorCastResult
        >>> answer = TensorCastResult.of(QueryResult.measured(
        ...     5.15584, kernel_type="RmsNorm", method="base_exact", exact_key="x2|..."),
        ...     compact=True)
        >>> answer.latency_us, answer.details, answer.all_details["exact_key"]
        (5.15584, {'kernel_type': 'RmsNorm', 'method': 'base_exact'}, 'x2|...')
    """

    shape_match_info: ShapeMatchInfo | None = None
    """Shape debug info of a single-kernel answer."""
    sub_kernel_shapes: list[SubKernelShapeInfo] | None = None
    """Shape debug info of each sub-kernel of a composite answer."""
    full_details: dict[str, Any] | None = None
    """A compact result's whole details; None when ``details`` is already whole."""

    @property
    def all_details(self) -> dict[str, Any]:
        """The whole details, compact or not.

        Examples:
            >>> from profstore import QueryResult
            >>> from profstore.tensorcast import TensorCastResult
            >>> result = QueryResult.measured(1.0, method="base_exact", op="aten.mm.default")
            >>> TensorCastResult.of(result, compact=True).all_details["op"]
            'aten.mm.default'
        """
        return self.details if self.full_details is None else self.full_details

    @classmethod
    def of(cls, result: QueryResult, leaf: LeafOp | None = None,
           row_shapes: RowShapes | None = None, compact: bool = False) -> TensorCastResult:
        """A ``QueryResult`` with its shape debug info.

        Never raises.

        Args:
            result: the answer.
            leaf: the descriptor asked (its shapes are the simulation shapes).
            row_shapes: ``(file, line) -> input shapes`` of a stored row (kernel shapes
                are ``[]`` without it).
            compact: cut ``details`` to ``COMPACT_KEYS`` (the rest in ``full_details``).

        Returns:
            The answer TensorCast reads.

        Examples:
            >>> from profstore import LeafOp, QueryResult
            >>> from profstore.tensorcast import TensorCastResult
            >>> leaf = LeafOp("aten.mm.default", args=[{"shape": [200, 7168], "dtype": "bfloat16"}])
            >>> result = QueryResult.measured(5.0, method="base_exact",
            ...                               matched_rows=[{"file": "MatMulV2.csv", "line": 12}])
            >>> TensorCastResult.of(result, leaf, lambda file, line: [[128, 7168]]).shape_match_info
            ShapeMatchInfo(simulation_shapes=[[200, 7168]], kernel_shapes=[[128, 7168]],
                           shape_match_rule='base_exact')
        """
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

    def with_simulation(self, shapes: ShapeList) -> TensorCastResult:
        """This answer for another invocation of its op, whose simulation shapes are
        ``shapes`` (an answer that reads none of the op's arguments: ADR 0130).

        Never raises.

        Args:
            shapes: the other invocation's simulation shapes (``invocation_shapes``).

        Returns:
            A copy whose shape debug info, and each sub-kernel's, names ``shapes``.

        Examples:
            >>> from profstore import QueryResult
            >>> from profstore.tensorcast import TensorCastResult
            >>> view = TensorCastResult.of(QueryResult.measured(0.0, method="zero_cost"))
            >>> view.with_simulation([[4, 7168]]).shape_match_info
            ShapeMatchInfo(simulation_shapes=[[4, 7168]], kernel_shapes=[],
                           shape_match_rule='zero_cost')
        """
        info, subs = self.shape_match_info, self.sub_kernel_shapes
        if info is not None:
            info = ShapeMatchInfo(shapes, info.kernel_shapes, info.shape_match_rule)
        if subs is not None:
            subs = [replace(sub, simulation_shapes=shapes) for sub in subs]
        return TensorCastResult(self.latency_us, self.source, self.confidence, self.reason,
                                self.details, info, subs, self.full_details)

    def shape_debug_statistics(self) -> dict[str, Any]:
        """What TensorCast merges into the op's statistics (upstream's keys and spelling).

        Never raises.

        Returns:
            ``sub_kernel_shapes`` (a JSON list) for a composite, else ``kernel_shapes``
            (text, ``""`` when none) and ``shape_match_rule``.

        Examples:
            >>> from profstore import QueryResult
            >>> from profstore.tensorcast import TensorCastResult
            >>> TensorCastResult.of(QueryResult.measured(5.0, method="base_exact")
            ...                     ).shape_debug_statistics()
            {'kernel_shapes': '', 'shape_match_rule': 'base_exact'}
        """
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
