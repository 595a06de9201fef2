"""Elementwise broadcast / shared-token: direct output dimensions (RFC §4.2.1).

Axes come from the first output shape after removing an optional leading batch 1
(``direct_shape``):

* rank 2: ``axis_0``, then ``axis_1`` (``axis_0`` fixed), then ``axis_0 + axis_1``;
* rank 1 or above 2: ``axis_0`` only, the rest of the shape (the tail) fixed in the
  regime.

Regime: kernel, output rank, input count, broadcast pattern and output dtype.
Together with the axes this is the full output shape, so an equal output shape in
the same regime is an exact coordinate (MEASURED). No latency is ever rescaled by
dtype byte width: a row of another dtype is another regime.

Output dtype: the profiler name from ``to_profiler_dtype`` with its default rule,
so a leaf's ``float16`` reads as ``DT_BF16`` exactly as in base exact matching
(TensorCast traces say float16 for models that run BF16 kernels). After that
translation the match is exact — ``float32`` never borrows a ``DT_BF16`` row.

Broadcast pattern: each input right-aligned against the full output shape, one
code per output dimension — ``s`` same size, ``b`` broadcast (input dimension 1 or
absent where the output's is larger), ``m`` absent where the output's is 1 — with
the stripped batch position dropped; inputs are joined by ``;`` (``"ss;sb"``).

A leading 1 is a batch only on outputs of rank 3 or more. A rank-2 ``[1, H]`` output
is one token row: it keeps ``axis_0 = 1`` and so shares its regime and coordinate
with ``[1, 1, H]`` and its axis with ``[T, H]``. (``strip_leading_batch`` would make
it rank 1 with the hidden size as ``axis_0``, apart from every other token count.)
"""

from __future__ import annotations

from collections.abc import Sequence

from profstore.model.csv_row import CsvRow
from profstore.model.dtypes import to_profiler_dtype
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.model.shapes import Shape, drop_batch_dim, logical_shape, shape_text
from profstore.paths.base import (
    Extraction,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
    unwrap,
)


class ElementwisePath(OperatorPath):
    name = "elementwise"
    selectors = frozenset({"elementwise"})
    axis_names = ("axis_0", "axis_1")
    axis_groups = ((0,), (1,), (0, 1))
    ceiling = 2
    formats_as_layout = True
    owns_exact = True

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        if not row.outputs or not row.outputs[0].present:
            return refuse(Reason.TARGET_UNAVAILABLE, "row has no first output shape")
        out = row.outputs[0]
        inputs = [s.known_shape for s in row.present_inputs()]
        found = elementwise_extraction(ctx.kernel_type, out.known_shape, out.dtype, inputs)
        return [unwrap(found)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        if not leaf.outputs:
            return refuse(Reason.REQUIRED_FIELD_MISSING, "leaf has no output tensor")
        out = leaf.outputs[0]
        try:
            dtype = to_profiler_dtype(out.dtype)
        except ValueError as error:
            return refuse(Reason.TARGET_UNAVAILABLE, f"output dtype: {error}")
        inputs = [logical_shape(t.shape, t.format) for t in leaf.tensor_inputs()]
        return elementwise_extraction(ctx.kernel_type, logical_shape(out.shape, out.format),
                                      dtype, inputs)

    def exact_owner_for(self, leaf: LeafOp) -> bool:
        """Only a valid non-scalar output owns its exact lookup (RFC §3.1); a scalar output
        keeps the base elementwise lookup."""
        return bool(leaf.outputs) and len(drop_batch_dim(leaf.outputs[0].shape)) >= 1


def elementwise_extraction(kernel: str, output: Shape, output_dtype: str,
                           inputs: Sequence[Shape]) -> Extraction | Refusal:
    """The one regime builder both sides use."""
    shape = drop_batch_dim(output)
    if not shape:
        return refuse(Reason.TARGET_UNAVAILABLE, "scalar output: no elementwise axis")
    if not inputs:
        return refuse(Reason.TARGET_UNAVAILABLE, "no input tensors")
    dropped = len(output) - len(shape)
    codes = []
    for i, tensor in enumerate(inputs):
        code = broadcast_code(tensor, output)
        if code is None:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"input {i} shape {tensor} does not broadcast to output {output}")
        codes.append(code[dropped:])
    rank2 = len(shape) == 2
    regime = {
        "kernel": kernel,
        "output_rank": len(shape),
        "input_count": len(inputs),
        "broadcast_pattern": ";".join(codes),
        "output_dtype": output_dtype,
        "output_tail": shape_text(shape[1:]) if len(shape) > 2 else "",
    }
    axes = (float(shape[0]), float(shape[1])) if rank2 else (float(shape[0]),)
    return Extraction(regime, axes)


def broadcast_code(tensor: Shape, output: Shape) -> str | None:
    """One code per output dimension (see the module docstring); None when ``tensor``
    cannot broadcast to ``output``."""
    if len(tensor) > len(output):
        return None
    padded = (None,) * (len(output) - len(tensor)) + tuple(tensor)
    codes = []
    for dim, out in zip(padded, output):
        if dim == out:
            codes.append("s")
        elif dim is None:
            codes.append("m" if out == 1 else "b")
        elif dim == 1:
            codes.append("b")
        else:
            return None
    return "".join(codes)
