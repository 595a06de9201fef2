"""The flow the two request-grouped sparse attention paths share (RFC §4.3).

LightningIndexer and SparseFlashAttention read a row the same way — enough input slots,
topk, the per-request metadata slots, the API path the mapping states — and a leaf the
same way — its tensor arguments, topk, the request grouping from the context (and, for
the indexer, its sequence arguments). They differ only in where topk sits, which slots
hold the request metadata and what goes into the regime; a subclass says those and
builds its regime from the normalised fields with ``extraction``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from profstore.model.csv_row import CsvRow, Slot
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.paths.base import (
    Extraction,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
    unwrap,
)
from profstore.paths.request_grouping import (
    Grouping,
    arg_request_counts,
    check_runtime_topk,
    describe_attention,
    leaf_slots,
    row_api_paths,
    row_grouping,
    target_api_path,
    target_grouping,
    with_api_path,
)

ROW_QUERY, ROW_CACHE = 0, 1


class GroupedAttentionPath(OperatorPath):
    """Row side and target side of a request-grouped attention path; subclasses set the
    slot layout and implement ``row_topk``, ``target_topk`` and ``extraction``."""

    owns_exact = True
    specialized_base = True
    row_request_slots: ClassVar[tuple[int, ...]]
    leaf_tensors: ClassVar[tuple[tuple[int, str], ...]]
    """(argument position, name) of the query, the cache and any further tensor read."""
    leaf_sequence_args: ClassVar[Mapping[int, str]] = {}
    """Argument positions of per-request sequence lengths the leaf carries, if any."""

    def row_topk(self, row: CsvRow) -> int | Refusal:
        raise NotImplementedError

    def target_topk(self, leaf: LeafOp, slots: Sequence[Slot]) -> int | Refusal:
        raise NotImplementedError

    def extraction(self, kernel: str, query: Slot, cache: Slot, topk: int,
                   grouping: Grouping) -> Extraction | Refusal:
        """The one regime builder both sides call with their normalised fields."""
        raise NotImplementedError

    def row_refusal(self, row: CsvRow) -> Refusal | None:
        """A row this path cannot read for a reason of its own (None: none)."""
        return None

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        needed = max(self.row_request_slots) + 1
        if len(row.inputs) < needed:
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          f"row has {len(row.inputs)} inputs; {ctx.kernel_type} needs {needed}")
        topk = unwrap(self.row_refusal(row) or self.row_topk(row))
        grouping = unwrap(check_runtime_topk(row, topk)
                          or row_grouping(row, self.row_request_slots))
        found = unwrap(self.extraction(ctx.kernel_type, row.inputs[ROW_QUERY],
                                       row.inputs[ROW_CACHE], topk, grouping))
        api_paths = unwrap(row_api_paths(row, ctx, self.selectors))
        return [with_api_path(found, api) for api in api_paths]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        slots = unwrap(leaf_slots(leaf, self.leaf_tensors))
        topk = unwrap(self.target_topk(leaf, slots))
        counts = arg_request_counts(leaf, self.leaf_sequence_args)
        grouping = unwrap(target_grouping(leaf.context, counts))
        found = unwrap(self.extraction(ctx.kernel_type, slots[0], slots[1], topk, grouping))
        return with_api_path(found, target_api_path(ctx))

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        return describe_attention(extraction)
