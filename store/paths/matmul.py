"""Phase 1 MatMul: M/K/N axes for the MatMul kernels a plain mapping reaches (DESIGN §6).

Axes, the same on both sides: K is the activation's last dimension, N the output's last
dimension (for a leaf without an output, the weight's last: ``implied_output``), M the
product of the activation's other dimensions — except for a batched
matmul (weight of rank >= 3 after FRACTAL_NZ restore), where M is the activation's
second-to-last dimension and the batch dimensions become a regime field.

The weight is only checked to hold K and N in its last two dimensions, in either order:
the CSVs store ND weights as (K, N) or (N, K), a restored FRACTAL_NZ weight is (K, N) for
BF16 MatMulV2 but (N, K) for INT8 QuantBatchMatmulV3, while a leaf's weight is logical
(K, N). Orientation is therefore not a regime field (a leaf cannot state it).

Regime: kernel, dtypes and formats of the two matrix inputs, output dtype, batch dims,
and (Phase 1 MatMul only) the input count, so a biased call (``aten.addmm``: bias, mat1,
mat2) never borrows plain two-input rows. Row side: the first two present inputs and the
first present output.

The helpers here (``Operand``, ``MatrixCall``, ``row_call``, ``target_call``,
``matrix_axes``, ``matmul_regime``) are shared with ``quant_matmul`` so the two matrix
paths read shapes the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from profstore.model.csv_row import CsvRow, Slot
from profstore.model.leaf import LeafOp
from profstore.model.mapping import MappingEntry
from profstore.model.normalizers import normalize_target_inputs
from profstore.model.result import Reason
from profstore.model.shapes import Shape, numel, shape_text
from profstore.model.tensor_spec import TensorSpec
from profstore.paths.base import (
    Extraction,
    Operand,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
    target_operand,
    unwrap,
)

MATMUL_AXES = ("M", "K", "N")
MATMUL_GROUPS = ((0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2))

#: Ops whose matrix operands are not the first two tensors (a bias comes first).
_MATRIX_POSITIONS = {"aten.addmm.default": (1, 2), "aten.baddbmm.default": (1, 2)}


@dataclass(frozen=True)
class MatrixCall:
    activation: Operand
    weight: Operand
    output: Operand


@dataclass(frozen=True)
class MatrixAxes:
    batch: Shape
    m: int
    k: int
    n: int

    @property
    def coordinate(self) -> tuple[float, float, float]:
        return (float(self.m), float(self.k), float(self.n))


def matrix_axes(call: MatrixCall) -> MatrixAxes | Refusal:
    """M, K, N and batch dims of a call, or why the shapes are not one matmul."""
    act, weight, out = call.activation.shape, call.weight.shape, call.output.shape
    if not act or len(weight) < 2 or not out:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"shapes {list(act)} x {list(weight)} -> {list(out)} are not a matmul")
    batch: Shape = ()
    if len(weight) >= 3:
        batch = tuple(weight[:-2])
        if len(act) != len(weight) or tuple(act[:-2]) != batch:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"batch dims of {list(act)} and {list(weight)} differ")
        m = act[-2]
    else:
        m = math.prod(act[:-1])
    axes = MatrixAxes(batch, m, act[-1], out[-1])
    if sorted(weight[-2:]) != sorted((axes.k, axes.n)):
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"weight {list(weight)} does not hold K={axes.k} and N={axes.n}")
    if numel(out) != math.prod(batch) * axes.m * axes.n or min(axes.m, axes.k, axes.n) <= 0:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"output {list(out)} is not batch x M={axes.m} x N={axes.n}")
    return axes


def matmul_regime(kernel: str, call: MatrixCall, axes: MatrixAxes) -> dict[str, Any]:
    act, weight = call.activation, call.weight
    return {
        "kernel": kernel,
        "dtypes": f"{act.dtype};{weight.dtype}",
        "activation_dtype": act.dtype,
        "weight_dtype": weight.dtype,
        "formats": f"{act.format};{weight.format}",
        "output_dtype": call.output.dtype,
        "batch_dims": shape_text(axes.batch) if axes.batch else "none",
    }


def _slot_operand(slot: Slot) -> Operand:
    return Operand(slot.known_shape, slot.dtype, slot.format or "ND")


def row_call(row: CsvRow) -> MatrixCall | Refusal:
    """The first two present inputs and the first present output of a CSV row."""
    inputs, outputs = row.present_inputs(), row.present_outputs()
    if len(inputs) < 2 or not outputs:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"row has {len(inputs)} input(s) and {len(outputs)} output(s); "
                      "a matmul needs two inputs and an output")
    return MatrixCall(_slot_operand(inputs[0]), _slot_operand(inputs[1]),
                      _slot_operand(outputs[0]))


def operand_format(tensor: TensorSpec, position: int, entry: MappingEntry) -> str:
    """The tensor's format as resolved before the path runs (a policy, the mapping's
    ``expected_input_formats`` or the measured rows fill an unstated one:
    store/lookup/format_resolution.py); ND for a format still unstated."""
    return tensor.format or "ND"


def target_tensors(leaf: LeafOp, ctx: TargetContext) -> tuple[TensorSpec, ...]:
    """The leaf's tensor inputs after the kernel normaliser, cut to ``tc_input_count``."""
    tensors = normalize_target_inputs(ctx.kernel_type, leaf.tensor_inputs())
    return tensors[: ctx.entry.tc_input_count] if ctx.entry.tc_input_count else tensors


def target_call(leaf: LeafOp, ctx: TargetContext, *, infer_output: bool = False
                ) -> MatrixCall | Refusal:
    """The leaf's two matrix operands (Phase 1 dtype rule) and its first output.

    With ``infer_output`` a leaf without an output gets the one its operands imply
    (``implied_output``); otherwise such a leaf is a REQUIRED_FIELD_MISSING refusal.
    """
    tensors = target_tensors(leaf, ctx)
    first, second = _MATRIX_POSITIONS.get(leaf.op, (0, 1))
    if len(tensors) <= second:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"leaf has {len(tensors)} tensor input(s); a matmul needs two")
    try:
        act, weight = tensors[first], tensors[second]
        activation = target_operand(act, operand_format(act, 0, ctx.entry))
        matrix = target_operand(weight, operand_format(weight, 1, ctx.entry))
        if leaf.outputs:
            output = target_operand(leaf.outputs[0], leaf.outputs[0].format)
        elif infer_output and activation.dtype == matrix.dtype:
            output = implied_output(activation, matrix)
        else:
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          "leaf has no output: N and the output dtype are regime fields")
        return MatrixCall(activation, matrix, output)
    except ValueError as error:
        return refuse(Reason.TARGET_UNAVAILABLE, str(error))


def implied_output(activation: Operand, weight: Operand) -> Operand:
    """The output of a plain matmul leaf that states none. RFC §4.4.2 reads the inputs as
    M x K and K x N, so N is the (logical) weight's last dimension; the output keeps the
    activation's leading dimensions and, both operands being of one dtype, that dtype
    (torch's result dtype for same-dtype operands)."""
    return Operand((*activation.shape[:-1], weight.shape[-1]), activation.dtype, "ND")


def matmul_extraction(kernel: str, call: MatrixCall | Refusal,
                      **extra: Any) -> Extraction | Refusal:
    """The MatMul regime (plus ``extra`` fields) and M/K/N of a call."""
    matrix = unwrap(call)
    axes = unwrap(matrix_axes(matrix))
    return Extraction({**matmul_regime(kernel, matrix, axes), **extra}, axes.coordinate)


class MatMulPath(OperatorPath):
    name = "matmul"
    selectors = frozenset()
    axis_names = MATMUL_AXES
    axis_groups = MATMUL_GROUPS
    ceiling = 3
    format_anchor_axes = frozenset({"K", "N"})
    phase1_kernels = frozenset({"MatMulV2", "MatMulV3", "MatMulCommon", "BatchMatMulV2",
                                "BatchMatMulNd", "TransposeBatchMatMul"})

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        found = matmul_extraction(ctx.kernel_type, row_call(row),
                                  input_count=len(row.present_inputs()))
        return [unwrap(found)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        return matmul_extraction(ctx.kernel_type, target_call(leaf, ctx, infer_output=True),
                                 input_count=len(target_tensors(leaf, ctx)))

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        return {"batch_dims": extraction.regime.get("batch_dims")}
