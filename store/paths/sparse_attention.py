"""SparseFlashAttention for the canonical ``sparse_attn_sharedkv`` leaf (RFC §4.3.2): tokens only.

Row (CSV) slots: query ``[T, H, D]``, KV cache (key, then value: shared KV), topk
indices ``[T, 1, topk]``, block table, per-request query offsets and KV lengths, then
the rope parts of query and cache. Leaf: ``q [B, S, H, D], kv (cache), attn_sink,
topk_indices, softmax_scale, head_dim, kv_dependency`` — no sequence arguments, so the
request grouping comes from the leaf's context alone.

Regime: query and cache profiling dtypes, the first two input formats, heads, head
dimension, the full cache shape, the selected topk (last dimension of the topk indices),
the sparse phase and the request grouping. Per-request KV lengths are the semantic
discriminator. Cache blocks are capacity, not effective KV length, so they are never
an axis.

Sparse phase is the phase of the sparse-attention call (``Runtime phase`` on a row;
``context.phase`` or the per-request lengths on a leaf). The other sparse Runtime
columns do not qualify: ``sparse_indices_valid_count`` is min(topk, max KV length), a
function of the KV lengths already kept apart by the semantic; ``sparse_indices_pattern``
describes how the benchmark drew indices, which no leaf can state. A row whose
``Runtime sparse_block_size`` is not 1 selects blocks, not tokens, so its topk would
not mean what the leaf's topk means: such rows are refused.
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

ROW_QUERY, ROW_CACHE, ROW_TOPK = 0, 1, 3
ROW_REQUEST_SLOTS = (4, 5, 6)
LEAF_TENSORS = ((0, "q"), (1, "kv"), (3, "topk_indices"))
TOKEN_LEVEL = "1"


class SparseSharedKVPath(OperatorPath):
    name = "attention_sparse_sharedkv"
    selectors = frozenset({"attention_sparse_sharedkv"})
    kernels = frozenset({"SparseFlashAttention"})
    axis_names = ("tokens",)
    axis_groups = ((0,),)
    ceiling = 1
    owns_exact = True
    specialized_base = True

    def row_regime(self, row: CsvRow, ctx: RowContext) -> Sequence[Extraction] | Refusal:
        if len(row.inputs) <= max(ROW_REQUEST_SLOTS):
            return refuse(Reason.REQUIRED_FIELD_MISSING,
                          f"row has {len(row.inputs)} inputs; SparseFlashAttention needs "
                          f"{max(ROW_REQUEST_SLOTS) + 1}")
        block = row.extra("Runtime sparse_block_size")
        if block and block != TOKEN_LEVEL:
            return refuse(Reason.REGIME_MISMATCH,
                          f"Runtime sparse_block_size {block} selects blocks, not tokens")
        topk = last_dim(row.inputs[ROW_TOPK].shape, "input 3 (topk indices)")
        if isinstance(topk, Refusal):
            return topk
        grouping = check_runtime_topk(row, topk) or row_grouping(row, ROW_REQUEST_SLOTS)
        if isinstance(grouping, Refusal):
            return grouping
        found = sparse_extraction(ctx.kernel_type, row.inputs[ROW_QUERY], row.inputs[ROW_CACHE],
                                  topk, grouping)
        api_paths = row_api_paths(row, ctx, self.selectors)
        for refusal in (found, api_paths):
            if isinstance(refusal, Refusal):
                return refusal
        return [with_api_path(found, api) for api in api_paths]

    def target_regime(self, leaf: LeafOp, ctx: TargetContext) -> Extraction | Refusal:
        slots = leaf_slots(leaf, LEAF_TENSORS)
        if isinstance(slots, Refusal):
            return slots
        topk = last_dim(slots[2].shape, "topk_indices")
        if isinstance(topk, Refusal):
            return topk
        grouping = target_grouping(leaf.context, {})
        if isinstance(grouping, Refusal):
            return grouping
        found = sparse_extraction(ctx.kernel_type, slots[0], slots[1], topk, grouping)
        return found if isinstance(found, Refusal) else with_api_path(found, target_api_path(ctx))

    def describe(self, extraction: Extraction) -> dict[str, Any]:
        return describe_attention(extraction)


def sparse_extraction(kernel: str, query_slot: Slot, cache_slot: Slot, topk: int,
                      grouping: Grouping) -> Extraction | Refusal:
    """The one regime builder both sides call with their normalised fields."""
    query = flatten_query(query_slot.shape, "query")
    if isinstance(query, Refusal):
        return query
    if not cache_slot.shape:
        return refuse(Reason.TARGET_UNAVAILABLE,
                      f"KV cache must be a tensor of rank >= 1, got {cache_slot.shape}")
    regime: dict[str, Any] = {
        "kernel": kernel,
        **slot_fields((query_slot, cache_slot)),
        **query_fields(query),
        "cache_shape": ",".join(str(d) for d in cache_slot.shape),
        "topk": topk,
        "sparse_phase": grouping.phase,
        "request_grouping": grouping.key,
    }
    return Extraction(regime, (float(query.tokens),), grouping.semantic)
