"""MOE/DFC: the fused DispatchFFNCombine kernel, 1-D over tokens (RFC §4.1.1).

Axis: ``tokens``, the product of the activation's leading dimensions
(``[2, 4, 72, 7168]`` → 576; the CSV records ``[tokens, hidden]``).

Regime: kernel, activation dtype and format, quant subtype, weight dtype and
layout, the complete stacked GMM1/GMM2 weight shapes, hidden size, topk and EP
size. The target reads its subtype from the op name and the row from its weight
dtypes, so W8A8 rows never answer a plain, INT4, FP8 or MXFP4 target. The local
expert count is the first dimension of both GMM shapes, so it is fixed too.

EP size is required on both sides: a leaf without ``context.ep_size`` misses with
``ep_size_not_configured``; a row without a positive integer ``EP Size`` cell is
refused by this path with a precise reason (and stays a sample for other paths).
The mapping's ``embedded_compute`` / ``embedded_communication`` kernels are not
added to the answer; the success details name them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from profstore.model.csv_row import CsvRow, Slot
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.model.shapes import Shape, leading_product, logical_shape, shape_text
from profstore.model.tensor_spec import TensorSpec
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

KERNEL = "DispatchFFNCombine"
EP_COLUMN = "EP Size"


@dataclass(frozen=True)
class Variant:
    """One TensorCast DFC entry: its quant subtype and where its weight lists sit."""

    subtype: str
    gmm1_arg: int
    gmm2_arg: int


VARIANTS: Mapping[str, Variant] = {
    "dispatch_ffn_combine": Variant("plain", 2, 4),
    "dispatch_ffn_combine_quant": Variant("w8a8", 2, 7),
    "dispatch_ffn_combine_quant_int4": Variant("int4", 2, 7),
    "dispatch_ffn_combine_fp8": Variant("fp8", 2, 7),
    "dispatch_ffn_combine_mxfp4": Variant("mxfp4", 2, 8),
}


@dataclass(frozen=True)
class DfcFields:
    """Everything the regime and the axis are built from, read from either side."""

    subtype: str
    activation: Shape
    activation_dtype: str
    activation_format: str
    gmm1: Operand
    gmm2: Operand
    topk: int
    ep_size: int


@dataclass(frozen=True)
class DfcTarget(Extraction):
    """The target extraction plus the entry's embedded kernels, for the details only."""

    embedded: tuple[str, ...] = ()


class MoeFusedPath(OperatorPath):
    name = "moe_fused"
    selectors = frozenset({"moe_fused"})
    kernels = frozenset({KERNEL})
    axis_names = ("tokens",)
    axis_groups = ((0,),)
    ceiling = 1
    owns_exact = True

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        fields = unwrap(row_fields(row))
        return [dfc_extraction(ctx.kernel_type, fields)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        fields = unwrap(target_fields(leaf))
        found = dfc_extraction(ctx.kernel_type, fields)
        return DfcTarget(found.regime, found.axes, embedded=embedded_kernels(ctx.entry.raw))

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        regime = extraction.regime
        details: dict[str, Any] = {
            "ep_size": regime["ep_size"],
            "topk": regime["topk"],
            "local_experts": int(regime["gmm1_shape"].split(",")[0]),
            "quant_subtype": regime["quant_subtype"],
        }
        embedded = getattr(extraction, "embedded", ())
        if embedded:
            details["embedded_kernels_not_added"] = list(embedded)
            details["embedded_note"] = (
                "the mapping's embedded_compute/embedded_communication kernels are not "
                f"added: the latency is the {KERNEL} kernel alone")
        return details


def dfc_extraction(kernel: str, f: DfcFields) -> Extraction:
    """The one regime builder both sides use."""
    regime = {
        "kernel": kernel,
        "quant_subtype": f.subtype,
        "activation_dtype": f.activation_dtype,
        "activation_format": f.activation_format,
        "weight_dtype": _pair(f.gmm1.dtype, f.gmm2.dtype),
        "weight_format": _pair(f.gmm1.format, f.gmm2.format),
        "gmm1_shape": shape_text(f.gmm1.shape),
        "gmm2_shape": shape_text(f.gmm2.shape),
        "hidden": f.activation[-1],
        "topk": f.topk,
        "ep_size": f.ep_size,
    }
    return Extraction(regime, (float(leading_product(f.activation)),))


def _pair(first: str, second: str) -> str:
    return first if first == second else f"{first};{second}"


# ---- row side -------------------------------------------------------------------------

_ROW_SLOTS = ((0, "activation"), (1, "GMM1 weight"), (2, "GMM2 weight"), (3, "expert indices"))


def row_fields(row: CsvRow) -> DfcFields | Refusal:
    """CSV inputs: x, GMM1 weight, GMM2 weight, expert indices (then scales, probabilities)."""
    for index, what in _ROW_SLOTS:
        if index >= len(row.inputs) or not row.inputs[index].present:
            return refuse(Reason.REQUIRED_FIELD_MISSING, f"CSV input {index + 1} ({what}) missing")
    x, gmm1, gmm2, indices = (row.inputs[i] for i, _ in _ROW_SLOTS)
    if len(x.known_shape) < 2 or not indices.known_shape:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"activation {x.shape} or expert indices {indices.shape} has no token rows")
    subtype = unwrap(row_subtype(x.dtype, gmm1.dtype, gmm2.dtype))
    ep_size = unwrap(row_ep_size(row))
    return DfcFields(subtype, x.known_shape, x.dtype, x.format, _slot_weight(gmm1),
                     _slot_weight(gmm2), indices.known_shape[-1], ep_size)


def _slot_weight(slot: Slot) -> Operand:
    return Operand(slot.known_shape, slot.dtype, slot.format)


_FLOAT_ACTIVATIONS = frozenset({"DT_BF16", "DT_FLOAT16", "FLOAT16"})


def row_subtype(activation: str, gmm1: str, gmm2: str) -> str | Refusal:
    """The quant subtype a row's activation and weight dtypes spell."""
    if gmm1 != gmm2:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"GMM1/GMM2 weight dtypes differ ({gmm1}, {gmm2}): no known subtype")
    if activation in _FLOAT_ACTIVATIONS:
        if gmm1 == activation:
            return "plain"
        if gmm1 == "INT8":
            return "w8a8"
    if gmm1 == "INT4":
        return "int4"
    if gmm1.startswith("FLOAT8") or gmm1 == "HIFLOAT8":
        return "fp8"
    if gmm1.startswith("FLOAT4") or "MXFP4" in gmm1.upper():
        return "mxfp4"
    return refuse(Reason.TARGET_UNAVAILABLE,
                  f"activation {activation} with {gmm1} weights is no known DFC subtype")


def row_ep_size(row: CsvRow) -> int | Refusal:
    """A positive integer ``EP Size`` cell; anything else refuses the row, saying why."""
    if not row.has_column(EP_COLUMN):
        return refuse(Reason.REQUIRED_FIELD_MISSING, f"{EP_COLUMN} column missing")
    text = row.extra(EP_COLUMN) or ""
    if not text:
        return refuse(Reason.REQUIRED_FIELD_MISSING, f"{EP_COLUMN} blank")
    if re.fullmatch(r"[0-9]{19,}", text):  # int() refuses 4300+ digits; no EP is this large
        return refuse(Reason.REQUIRED_FIELD_MISSING, f"{EP_COLUMN} {text[:24]!r}… is too large")
    if not re.fullmatch(r"[0-9]+", text) or int(text) <= 0:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      f"{EP_COLUMN} {text!r} is not a positive integer")
    return int(text)


# ---- target side ----------------------------------------------------------------------


def variant_of(op: str) -> Variant | None:
    """``tensor_cast.dispatch_ffn_combine_quant.default`` → the W8A8 variant."""
    return next((VARIANTS[part] for part in op.split(".") if part in VARIANTS), None)


def target_fields(leaf: LeafOp) -> DfcFields | Refusal:
    variant = variant_of(leaf.op)
    if variant is None:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"{leaf.op} is no known DispatchFFNCombine variant: subtype unknown",
                      known=sorted(VARIANTS))
    x, indices = leaf.arg(0), leaf.arg(1)
    if not isinstance(x, TensorSpec) or x.rank < 2:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      "arg 0 (activation) must be a tensor of rank >= 2")
    if not isinstance(indices, TensorSpec) or indices.rank < 1:
        return refuse(Reason.REQUIRED_FIELD_MISSING,
                      "topk cannot be extracted: arg 1 (expert_indices) is not a tensor "
                      "of rank >= 1")
    weights = []
    for name, position in (("gmm1", variant.gmm1_arg), ("gmm2", variant.gmm2_arg)):
        weight = stacked_weight(leaf.arg(position))
        if isinstance(weight, str):
            return refuse(Reason.REQUIRED_FIELD_MISSING, f"arg {position} ({name}_w): {weight}",
                          subtype=variant.subtype)
        weights.append(weight)
    if leaf.context.ep_size is None:
        return refuse(Reason.EP_SIZE_NOT_CONFIGURED,
                      "EP size is a required regime field: set context.ep_size")
    try:
        activation_dtype = to_profiler_dtype(x.dtype)
    except ValueError as error:
        return refuse(Reason.TARGET_UNAVAILABLE, f"arg 0 (activation): {error}")
    return DfcFields(variant.subtype, x.shape, activation_dtype, x.format or "ND",
                     weights[0], weights[1], indices.shape[-1], leaf.context.ep_size)


def stacked_weight(value: Any) -> Operand | str:
    """A weight list as one stacked tensor: E per-expert 2-D tensors → ``(E, …)``; one 3-D
    tensor (alone or in a list) is already stacked. A string says what is wrong."""
    tensors = (value,) if isinstance(value, TensorSpec) else value
    if not isinstance(tensors, tuple) or not tensors:
        return "weight list missing"
    if not all(isinstance(t, TensorSpec) for t in tensors):
        return "weight list holds a non-tensor"
    shapes = {logical_shape(t.shape, t.format) for t in tensors}
    kinds = {(t.dtype, t.format) for t in tensors}
    if len(shapes) != 1 or len(kinds) != 1:
        return "per-expert weights differ in shape, dtype or format"
    (shape,), ((dtype, fmt),) = shapes, kinds
    if len(tensors) == 1 and len(shape) == 3:
        stacked = shape
    elif len(shape) == 2:
        stacked = (len(tensors), *shape)
    else:
        return (f"{len(tensors)} weight tensor(s) of rank {len(shape)}: expected 2-D "
                "per-expert tensors or one 3-D stack")
    try:
        return Operand(stacked, to_profiler_dtype(dtype), fmt)
    except ValueError as error:
        return str(error)


def embedded_kernels(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """Kernel types named by the entry's ``embedded_compute`` / ``embedded_communication``."""
    found: list[str] = []
    for key in ("embedded_compute", "embedded_communication"):
        value = raw.get(key)
        items = value if isinstance(value, list) else [value]
        found += [str(i["kernel_type"]) for i in items
                  if isinstance(i, Mapping) and i.get("kernel_type")]
    return tuple(found)
