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

from profstore.model.csv_row import CsvRow, Slot
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.paths.base import Extraction, Refusal, refuse, unwrap
from profstore.paths.grouped_attention import GroupedAttentionPath
from profstore.paths.request_grouping import (
    Grouping,
    flatten_query,
    last_dim,
    query_fields,
    slot_fields,
)

ROW_TOPK = 3
TOKEN_LEVEL = "1"


class SparseSharedKVPath(GroupedAttentionPath):
    name = "attention_sparse_sharedkv"
    selectors = frozenset({"attention_sparse_sharedkv"})
    kernels = frozenset({"SparseFlashAttention"})
    axis_names = ("tokens",)
    axis_groups = ((0,),)
    ceiling = 1
    row_request_slots = (4, 5, 6)
    leaf_tensors = ((0, "q"), (1, "kv"), (3, "topk_indices"))

    def row_refusal(self, row: CsvRow) -> Refusal | None:
        block = row.extra("Runtime sparse_block_size")
        if block and block != TOKEN_LEVEL:
            return refuse(Reason.REGIME_MISMATCH,
                          f"Runtime sparse_block_size {block} selects blocks, not tokens")
        return None

    def row_topk(self, row: CsvRow) -> int | Refusal:
        return last_dim(row.inputs[ROW_TOPK].shape, "input 3 (topk indices)")

    def target_topk(self, leaf: LeafOp, slots: Sequence[Slot]) -> int | Refusal:
        return last_dim(slots[2].shape, "topk_indices")

    def extraction(self, kernel: str, query: Slot, cache: Slot, topk: int,
                   grouping: Grouping) -> Extraction | Refusal:
        flat = unwrap(flatten_query(query.shape, "query"))
        if not cache.shape:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"KV cache must be a tensor of rank >= 1, got {cache.shape}")
        regime: dict[str, Any] = {
            "kernel": kernel,
            **slot_fields((query, cache)),
            **query_fields(flat),
            "cache_shape": ",".join(str(d) for d in cache.shape),
            "topk": topk,
            "sparse_phase": grouping.phase,
            "request_grouping": grouping.key,
        }
        return Extraction(regime, (float(flat.tokens),), grouping.semantic)
