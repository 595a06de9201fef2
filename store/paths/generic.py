"""Phase 1 generic compute: one continuous axis, everything else fixed.

The axis is ``axis_0`` (the first dimension of the first input after an optional
leading batch 1, dropped from rank ≥ 3 only: ``store.shapes.drop_batch_dim``) or
``output_numel`` (the first output's element count), chosen per
kernel by ``interpolation_policy.kernel_overrides.<k>.generic_compute.axis``.

Regime, ``axis_0`` mode: kernel, input count, dtypes, and the shape signature of the
inputs where a leading dimension equal to the token count is written ``T`` (inputs
that share the token dimension move with it; every other dimension stays fixed).
Regime, ``output_numel`` mode: kernel, input count, dtypes, the output's rank and last
dimension, and per input what does not move with the output size (shapes as written: no
leading 1 is taken for a batch, since the axis is the output's size, not a token count,
and a concat of ``[1, 16, 128]`` rows is the one-token end of the ``[T, 16, 128]``
family): an index tensor (integer dtype) keeps only its rank, its length being the
output's row count; a data tensor keeps its whole shape, a leading dimension equal to the
output's row count written ``T`` (the embedding table ``[V, H]`` stays fixed, a
concatenated ``[T, 16, 128]`` moves). Data tensors concatenated along their rows (two or
more, of the output's rank, the output's tail each, their row counts adding up to the
output's) keep only that tail, the rows written ``C``: ``cat([x, x], 0)`` of ``[2730,
7168]`` reads ``C,7168;C,7168``, like every other pair of row blocks of one 7,168-wide
output (their row counts move with the output, none of them equals it, so the ``T`` rule
alone kept each split a regime of its own).
For a kernel in ``SCALED_SOURCE`` the source tensor's leading dimension is written as its
ratio to the row count (``8T``): Index gathers ``T`` rows out of ``8T`` in one family of
measurements and out of ``T`` in another, both moving with the output. Keeping an index
tensor's last dimension (and Index's source length) made every measured GatherV2 / Index
point its own regime.
"""

from __future__ import annotations

from collections.abc import Sequence

from profstore.model.csv_row import CsvRow
from profstore.model.exact_keys import target_signature
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.model.shapes import Shape, drop_batch_dim, numel, shape_text
from profstore.paths.base import (
    Extraction,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
    unwrap,
)


class GenericComputePath(OperatorPath):
    name = "generic"
    selectors = frozenset({"generic"})
    axis_names = ("axis_0",)
    axis_groups = ((0,),)
    ceiling = 1
    formats_as_layout = True

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        present = row.present_inputs()
        if not present:
            return refuse(Reason.TARGET_UNAVAILABLE, "row has no input tensors")
        outputs = [s.known_shape for s in row.present_outputs()]
        counts = {len(present)} | {n for n in ctx.tc_input_counts if n <= len(present)}
        shapes = [s.known_shape for s in present]
        dtypes = [s.dtype for s in present]
        return [unwrap(generic_extraction(ctx.kernel_type, shapes[:n], dtypes[:n], outputs,
                                          ctx.policy.generic_axis))
                for n in sorted(counts)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        shapes, dtypes = target_signature(leaf, ctx.entry, ctx.kernel_type)
        if not shapes:
            return refuse(Reason.TARGET_UNAVAILABLE, "leaf has no input tensors")
        outputs = [o.shape for o in leaf.outputs]
        return generic_extraction(ctx.kernel_type, shapes, dtypes, outputs, ctx.policy.generic_axis)


def generic_extraction(
    kernel: str,
    shapes: Sequence[Shape],
    dtypes: Sequence[str],
    outputs: Sequence[Shape],
    axis_mode: str,
) -> Extraction | Refusal:
    if axis_mode == "output_numel":
        return _numel_extraction(kernel, shapes, dtypes, outputs)
    first = drop_batch_dim(shapes[0])
    if not first:
        return refuse(Reason.TARGET_UNAVAILABLE, "first input is a scalar: no axis_0")
    tokens = first[0]
    signature = ";".join([_token_pattern(drop_batch_dim(s), tokens) for s in shapes])
    regime = {
        "kernel": kernel,
        "axis": "axis_0",
        "input_count": len(shapes),
        "dtypes": ";".join(dtypes),
        "shape_signature": signature,
    }
    return Extraction(regime, (float(tokens),))


def _token_pattern(shape: Shape, tokens: int) -> str:
    if shape and shape[0] == tokens:
        return "T," + shape_text(shape[1:]) if len(shape) > 1 else "T"
    return shape_text(shape)


#: Profiler dtypes of index tensors (their length moves with a gather's output).
INDEX_DTYPES = frozenset({"INT32", "INT64", "DT_INT32", "DT_INT64", "UINT32", "UINT64"})


def _numel_extraction(
    kernel: str, shapes: Sequence[Shape], dtypes: Sequence[str], outputs: Sequence[Shape]
) -> Extraction | Refusal:
    if not outputs:
        return refuse(Reason.TARGET_UNAVAILABLE, "output_numel axis needs an output shape")
    tokens = outputs[0][0] if outputs[0] else None
    scaled = kernel in SCALED_SOURCE
    if _row_concat(shapes, dtypes, outputs[0]):
        inputs = ";".join(f"i{len(s)}" if d in INDEX_DTYPES else _block_pattern(s)
                          for s, d in zip(shapes, dtypes))
    else:
        inputs = ";".join(_fixed_part(s, d, tokens, scaled and i == 0)
                          for i, (s, d) in enumerate(zip(shapes, dtypes)))
    regime = {
        "kernel": kernel,
        "axis": "output_numel",
        "input_count": len(shapes),
        "dtypes": ";".join(dtypes),
        "shape_signature": inputs + "->" + _rank_and_last(outputs[0]),
    }
    return Extraction(regime, (float(numel(outputs[0])),))


#: Kernels whose source tensor's leading dimension is a multiple of the output's rows.
SCALED_SOURCE = frozenset({"Index"})


def _row_concat(shapes: Sequence[Shape], dtypes: Sequence[str], output: Shape) -> bool:
    """Whether the data tensors are row blocks of ``output`` (module docstring)."""
    data = [s for s, d in zip(shapes, dtypes) if d not in INDEX_DTYPES]
    if len(data) < 2 or not output:
        return False
    if any(len(s) != len(output) or tuple(s[1:]) != tuple(output[1:]) for s in data):
        return False
    rows = [s[0] for s in data]
    return sum(rows) == output[0] and output[0] not in rows


def _block_pattern(shape: Shape) -> str:
    return "C," + shape_text(shape[1:]) if len(shape) > 1 else "C"


def _fixed_part(shape: Shape, dtype: str, tokens: int | None, scaled: bool = False) -> str:
    """What of one input stays fixed while the output grows (module docstring)."""
    if dtype in INDEX_DTYPES:
        return f"i{len(shape)}"
    if tokens is None or not shape:
        return ",".join(map(str, shape)) if shape else "()"
    rows = shape
    if scaled and tokens > 0 and rows and rows[0] % tokens == 0 and rows[0] > tokens:
        return ",".join([f"{rows[0] // tokens}T", *(str(d) for d in rows[1:])])
    return _token_pattern(rows, tokens)


def _rank_and_last(shape: Shape) -> str:
    return f"r{len(shape)}:{shape[-1]}" if shape else "r0"
