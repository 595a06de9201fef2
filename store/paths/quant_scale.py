"""Dynamic quant scale (compute_subcategory ``compute_scale``, RFC §4.4.2).

Axes: M, the product of every input dimension but the last, and K, the last one.

Regime: kernel, input dtype and format, output count, every output's dtype and format,
the scale mode of every auxiliary output (those after the quantized one), block size.
float16 reads as DT_FLOAT16 here only (the CSV keeps FP16 DynamicQuant rows apart).

Scale modes, from an auxiliary output's shape against the input (M, K):
per_token when it is the input shape without its last dimension (the DynamicQuant
convention; an M of 1 stays per_token), else per_token for M elements, per_tensor for one
element, per_channel for K. At M = 1 a one-element scale of any shape (``(1, 1)``, ``()``)
is per_token: one scale over one row is the per-token computation and the per-tensor one
alike, and the corpus measures it as per_token (v0.18 DynamicQuant
``1,2304 -> 1,2304;1``). A block kernel (DynamicBlockQuant) has per_block outputs of
M x ceil(K / block) elements: the target's block is its ``group_size``; the row's is the
smallest block consistent with its scale (exact when K is a multiple of the block).

A kernel that produces no scale (AscendQuantV2, listed as an alternate of
dynamic_quantize_symmetric in v0.18) has no scale mode: its rows are refused, so the
alternate misses with ``regime_mismatch`` and the refusal count in the details.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from profstore.model.csv_row import CsvRow
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.model.shapes import Shape, numel
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
from profstore.paths.matmul import operand_format

BLOCK_KERNELS = frozenset({"DynamicBlockQuant"})
FLOAT16_AS = "DT_FLOAT16"


@dataclass(frozen=True)
class QuantCall:
    """A quantization call: the input, every output (quantized first), the block size."""

    x: Operand
    outputs: tuple[Operand, ...]
    block_size: int | None = None


def scale_mode(scale: Shape, x: Shape, block_size: int | None) -> str | None:
    """The mode of one auxiliary output, or None when its shape fits no mode."""
    m, k, count = math.prod(x[:-1]), x[-1], numel(scale)
    if block_size is not None:
        return "per_block" if count == m * math.ceil(k / block_size) else None
    if tuple(scale) == tuple(x[:-1]):
        return "per_token"
    for mode, size in (("per_token", m), ("per_tensor", 1), ("per_channel", k)):
        if count == size:
            return mode
    return None


def scale_extraction(kernel: str, call: QuantCall) -> Extraction | Refusal:
    x = call.x.shape
    if not x or min(x) <= 0:
        return refuse(Reason.TARGET_UNAVAILABLE, f"input {list(x)} has no M x K reading")
    if len(call.outputs) < 2:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      f"{len(call.outputs)} output(s): the scale output is a regime field")
    modes = [scale_mode(o.shape, x, call.block_size) for o in call.outputs[1:]]
    if None in modes:
        shapes = [list(o.shape) for o in call.outputs[1:]]
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"auxiliary outputs {shapes} fit no scale mode of input {list(x)}"
                      + (f" with block size {call.block_size}" if call.block_size else ""))
    regime = {
        "kernel": kernel,
        "activation_dtype": call.x.dtype,
        "input_format": call.x.format,
        "output_count": len(call.outputs),
        "output_signature": ";".join(f"{o.dtype}:{o.format}" for o in call.outputs),
        "scale_mode": ";".join(str(m) for m in modes),
        "block_size": call.block_size,
    }
    return Extraction(regime, (float(math.prod(x[:-1])), float(x[-1])))


def row_block_size(x: Shape, scale: Shape) -> int | None:
    """The smallest block size giving ``scale`` its element count, or None."""
    m, k = math.prod(x[:-1]), x[-1] if x else 0
    if m <= 0 or k <= 0 or numel(scale) % m:
        return None
    blocks = numel(scale) // m
    return math.ceil(k / blocks) if blocks else None


def row_quant_call(row: CsvRow, kernel: str) -> QuantCall | Refusal:
    inputs, outputs = row.present_inputs(), row.present_outputs()
    if not inputs:
        return refuse(Reason.TARGET_UNAVAILABLE, "row has no input tensor")
    x = Operand(inputs[0].known_shape, inputs[0].dtype, inputs[0].format or "ND")
    ops = tuple(Operand(s.known_shape, s.dtype, s.format or "ND") for s in outputs)
    block = None
    if kernel in BLOCK_KERNELS and len(ops) >= 2:
        block = row_block_size(x.shape, ops[1].shape)
        if block is None:
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          f"no block size gives scale {list(ops[1].shape)} for {list(x.shape)}")
    return QuantCall(x, ops, block)


def _group_size(leaf: LeafOp) -> int | None:
    value = leaf.kwarg("group_size", leaf.arg(1))
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def target_quant_call(leaf: LeafOp, ctx: TargetContext) -> QuantCall | Refusal:
    x = leaf.arg(0)
    if not isinstance(x, TensorSpec):
        return refuse(Reason.REQUIRED_FIELD_MISSING, "argument 0 (x) is not a tensor")
    block = None
    if ctx.kernel_type in BLOCK_KERNELS:
        block = _group_size(leaf)
        if block is None:
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          "group_size (argument 1) is missing or not a positive integer")
    try:
        operand = target_operand(x, operand_format(x, 0, ctx.entry), FLOAT16_AS)
        outputs = tuple(target_operand(o, o.format, FLOAT16_AS) for o in leaf.outputs)
    except ValueError as error:
        return refuse(Reason.TARGET_UNAVAILABLE, str(error))
    return QuantCall(operand, outputs, block)


class ComputeScalePath(OperatorPath):
    name = "compute_scale"
    selectors = frozenset({"compute_scale"})
    selector_field = "compute_subcategory"
    axis_names = ("M", "K")
    axis_groups = ((0,), (1,), (0, 1))
    ceiling = 2
    owns_exact = True
    kernels = frozenset({"DynamicQuant", "DynamicBlockQuant"})

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        call = unwrap(row_quant_call(row, ctx.kernel_type))
        found = scale_extraction(ctx.kernel_type, call)
        return [unwrap(found)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        call = unwrap(target_quant_call(leaf, ctx))
        return scale_extraction(ctx.kernel_type, call)

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        regime = extraction.regime
        return {"scale_mode": regime.get("scale_mode"), "block_size": regime.get("block_size")}
