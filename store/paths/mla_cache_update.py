"""MLA cache update: ``scatter_nd_update_mla`` on ScatterNdUpdate, 1-D over tokens
(RFC §4.4.3).

TensorCast passes ``(kv/update, kv_cache, slot_mapping/index, window_size,
seq_lens)``; the kernel and its CSV take ``(cache, index, update)``. The target is
reordered to the CSV order before anything is read from it, by the one ScatterNdUpdate
normaliser the base exact lookup also applies, so the two can never disagree.

Axis: ``tokens``, the update's rows: its first dimension for rank 2, the product of
every dimension but the last above (``[4096, 1, 128]`` → 4096).

Regime: the three dtypes and formats (cache, index, update), the complete cache
shape (cache capacity is not an axis, so caches of another size never share
rows) and the update tail (its last dimension).

Exact ownership stays with the base lookup (RFC §3.1 lists no cache-update
owner): the ScatterNdUpdate kernel input normaliser (``store.normalizers``) gives
the base exact lookup the same CSV order, so a leaf whose tensors equal a row's
is answered by the base first; only then does this path look for the exact
coordinate (which also meets rows whose update carries a middle 1, or whose index
is spelled ``[T]`` instead of ``[T, 1]``) and interpolate.
"""

from __future__ import annotations

from collections.abc import Sequence

from profstore.model.csv_row import CsvRow
from profstore.model.leaf import LeafOp
from profstore.model.normalizers import normalize_target_inputs
from profstore.model.result import Reason
from profstore.model.shapes import leading_product, shape_text
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

CSV_ORDER = ("cache", "index", "update")
"""The kernel's (and its CSV's) input order; the target gets there through the same
ScatterNdUpdate normaliser the base exact lookup uses (``store.normalizers``)."""


class MlaCacheUpdatePath(OperatorPath):
    name = "scatter_nd_update_mla"
    selectors = frozenset({"scatter_nd_update_mla"})
    kernels = frozenset({"ScatterNdUpdate", "ScatterNdUpdateAiCore"})
    axis_names = ("tokens",)
    axis_groups = ((0,),)
    ceiling = 1
    owns_exact = False

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        if len(row.inputs) < 3 or not all(s.present for s in row.inputs[:3]):
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          "row lacks one of its three inputs (cache, index, update)")
        operands = [Operand(s.known_shape, s.dtype, s.format) for s in row.inputs[:3]]
        found = mla_extraction(ctx.kernel_type, *operands)
        return [unwrap(found)]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        tensors = normalize_target_inputs(ctx.kernel_type, leaf.tensor_inputs())
        if len(tensors) < 3:
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          f"{len(tensors)} input tensors; needs update, cache and index")
        operands = []
        for name, tensor in zip(CSV_ORDER, tensors[:3]):
            try:
                operands.append(target_operand(tensor, tensor.format))
            except ValueError as error:
                return refuse(Reason.TARGET_UNAVAILABLE, f"{name}: {error}")
        return mla_extraction(ctx.kernel_type, *operands)

    def describe(self, extraction: Extraction) -> dict[str, object]:
        return {"cache_shape": extraction.regime["cache_shape"],
                "update_tail": extraction.regime["update_tail"]}


def mla_extraction(kernel: str, cache: Operand, index: Operand,
                   update: Operand) -> Extraction | Refusal:
    """The one regime builder both sides use, on operands in CSV order."""
    if len(update.shape) < 2:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"update {update.shape} has no token rows (rank < 2)")
    if not cache.shape:
        return refuse(Reason.TARGET_UNAVAILABLE, "cache is a scalar")
    regime = {
        "kernel": kernel,
        "dtypes": ";".join(o.dtype for o in (cache, index, update)),
        "cache_dtype": cache.dtype,
        "cache_shape": shape_text(cache.shape),
        "update_tail": update.shape[-1],
        "formats": ";".join(o.format for o in (cache, index, update)),
    }
    return Extraction(regime, (float(leading_product(update.shape)),))
