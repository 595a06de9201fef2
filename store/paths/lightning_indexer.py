"""LightningIndexer (RFC §4.3.1): tokens, cache_blocks, then tokens + cache_blocks.

Row (CSV) slots: query ``[T, H, D]``, indexer cache ``[blocks, …]``, weights, then
three per-request INT32 metadata inputs (query offsets, KV lengths, block table);
outputs ``[T, 1, topk]``. Leaf (``quant_lightning_indexer``): ``q_states [B, S, H, D],
weights, indexer_cache, topk_limit, tp_world_size, seq_lens, query_lens`` — the cache
is argument 2, so the target follows the operator signature, not the CSV order.

Regime: query and cache profiling dtypes, the first two input formats (query, cache),
the cache tail after its first dimension, the token-flattened query rank, heads, head
dimension, topk (last output dimension), request grouping (requests, phase), and the
API path when the mapping states one. Per-request KV lengths are the semantic
discriminator. The path owns its exact coordinate: the base input-signature lookup
cannot see phase or KV lengths, so it must never answer this leaf (RFC §7.2 "base
generic exact rejection").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profstore.leaf import LeafOp
from profstore.paths.base import (
    Extraction,
    OperatorPath,
    Refusal,
    RowContext,
    TargetContext,
    refuse,
)
from profstore.paths.request_grouping import (
    Grouping,
    arg_request_counts,
    check_runtime_topk,
    describe_attention,
    flatten_query,
    last_dim,
    leaf_slots,
    query_fields,
    row_api_paths,
    row_grouping,
    slot_fields,
    target_api_path,
    target_grouping,
    with_api_path,
)
from profstore.result import Reason
from profstore.rows import CsvRow, Slot

ROW_QUERY, ROW_CACHE = 0, 1
ROW_REQUEST_SLOTS = (3, 4, 5)
LEAF_TENSORS = ((0, "q_states"), (2, "indexer_cache"))
LEAF_SEQUENCE_ARGS = {5: "seq_lens", 6: "query_lens"}


class LightningIndexerPath(OperatorPath):
    name = "attention_lightning_indexer"
    selectors = frozenset({"attention_lightning_indexer"})
    kernels = frozenset({"LightningIndexer"})
    axis_names = ("tokens", "cache_blocks")
    axis_groups = ((0,), (1,), (0, 1))
    ceiling = 2
    owns_exact = True
    specialized_base = True

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        if len(row.inputs) <= max(ROW_REQUEST_SLOTS):
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          f"row has {len(row.inputs)} inputs; LightningIndexer needs "
                          f"{max(ROW_REQUEST_SLOTS) + 1}")
        topk = last_dim(row.outputs[0].shape if row.outputs else None, "output 0")
        if isinstance(topk, Refusal):
            return topk
        grouping = check_runtime_topk(row, topk) or row_grouping(row, ROW_REQUEST_SLOTS)
        if isinstance(grouping, Refusal):
            return grouping
        found = indexer_extraction(ctx.kernel_type, row.inputs[ROW_QUERY],
                                   row.inputs[ROW_CACHE], topk, grouping)
        api_paths = row_api_paths(row, ctx, self.selectors)
        for refusal in (found, api_paths):
            if isinstance(refusal, Refusal):
                return refusal
        return [with_api_path(found, api) for api in api_paths]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        slots = leaf_slots(leaf, LEAF_TENSORS)
        if isinstance(slots, Refusal):
            return slots
        topk = last_dim(leaf.outputs[0].shape if leaf.outputs else None, "outputs[0]")
        if isinstance(topk, Refusal):
            return topk
        grouping = target_grouping(leaf.context, arg_request_counts(leaf, LEAF_SEQUENCE_ARGS))
        if isinstance(grouping, Refusal):
            return grouping
        found = indexer_extraction(ctx.kernel_type, slots[0], slots[1], topk, grouping)
        return found if isinstance(found, Refusal) else with_api_path(found, target_api_path(ctx))

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        return describe_attention(extraction)


def indexer_extraction(kernel: str, query_slot: Slot, cache_slot: Slot, topk: int,
                       grouping: Grouping) -> Extraction | Refusal:
    """The one regime builder both sides call with their normalised fields."""
    query = flatten_query(query_slot.shape, "query")
    if isinstance(query, Refusal):
        return query
    cache = cache_slot.shape
    if not cache:
        return refuse(Reason.TARGET_UNAVAILABLE, f"cache must be [blocks, ...], got {cache}")
    regime: dict[str, Any] = {
        "kernel": kernel,
        **slot_fields((query_slot, cache_slot)),
        "cache_tail": ",".join(str(d) for d in cache[1:]),
        **query_fields(query),
        "topk": topk,
        "request_grouping": grouping.key,
    }
    return Extraction(regime, (float(query.tokens), float(cache[0])), grouping.semantic)
