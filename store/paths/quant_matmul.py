"""Quantized matrix compute (compute_subcategory ``quantized_matmul``, RFC §4.4.2).

Reuses the Phase 1 MatMul reading of shapes (``store.paths.matmul``): M and K from the
activation, N from the output, the weight checked to hold K and N; only the first two
inputs are matched (``tc_input_count: 2``: the scale/offset slots of the CSV are not
regime fields). The target's weight format is the one it states or, for ND, the mapping's
``expected_input_formats``.

Regime: the MatMul regime (dtypes and formats of the two matrix inputs, output dtype,
batch dims) plus output count, every output's dtype and format, and the quant subtype.
The row reads its subtype from its weight dtype; the target from its op
(``static_quant_linear`` int8, ``_int4`` int4, ``fp8_linear`` fp8, ``mxfp4_linear``
mxfp4), so an FP8 or MXFP4 leaf never meets INT8 rows even if it states int8 tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profstore.model.csv_row import CsvRow
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.paths.base import (
    Extraction,
    Operand,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
    unwrap,
)
from profstore.paths.matmul import (
    MATMUL_AXES,
    MATMUL_GROUPS,
    MatrixCall,
    matmul_extraction,
    row_call,
    target_call,
)

#: Profiler weight dtype -> quant subtype; other dtypes are their own (lower-case) subtype.
_SUBTYPE_BY_DTYPE = {
    "INT8": "int8",
    "INT4": "int4",
    "FLOAT8_E4M3FN": "fp8",
    "FLOAT8_E5M2": "fp8",
    "HIFLOAT8": "fp8",
    "FLOAT4_E2M1": "mxfp4",
}
#: Op -> the quant subtype it declares, whatever dtypes its tensors state.
_SUBTYPE_BY_OP = {
    "tensor_cast.static_quant_linear.default": "int8",
    "tensor_cast.static_quant_linear_int4.default": "int4",
    "tensor_cast.fp8_linear.default": "fp8",
    "tensor_cast.mxfp4_linear.default": "mxfp4",
}


def subtype_of_weight(dtype: str) -> str:
    return _SUBTYPE_BY_DTYPE.get(dtype, dtype.lower())


def quant_extraction(kernel: str, call: MatrixCall | Refusal, outputs: Sequence[Operand],
                     subtype: str) -> Extraction | Refusal:
    return matmul_extraction(
        kernel, call, output_count=len(outputs),
        output_signature=";".join(f"{o.dtype}:{o.format}" for o in outputs),
        quant_subtype=subtype)


class QuantizedMatmulPath(OperatorPath):
    name = "quantized_matmul"
    selectors = frozenset({"quantized_matmul"})
    selector_field = "compute_subcategory"
    axis_names = MATMUL_AXES
    axis_groups = MATMUL_GROUPS
    ceiling = 3
    format_anchor_axes = frozenset({"K", "N"})
    owns_exact = True
    kernels = frozenset({"QuantBatchMatmulV3"})

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        call = unwrap(row_call(row))
        outputs = [Operand(s.known_shape, s.dtype, s.format or "ND") for s in row.present_outputs()]
        found = quant_extraction(ctx.kernel_type, call, outputs,
                                 subtype_of_weight(call.weight.dtype))
        return [unwrap(found)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        call = unwrap(target_call(leaf, ctx))
        try:
            outputs = [Operand(o.shape, to_profiler_dtype(o.dtype), o.format or "ND")
                       for o in leaf.outputs]
        except ValueError as error:
            return refuse(Reason.TARGET_UNAVAILABLE, str(error))
        subtype = _SUBTYPE_BY_OP.get(leaf.op) or subtype_of_weight(call.weight.dtype)
        return quant_extraction(ctx.kernel_type, call, outputs, subtype)

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        return {"quant_subtype": extraction.regime.get("quant_subtype")}
