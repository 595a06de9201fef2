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


class LightningIndexerPath(GroupedAttentionPath):
    name = "attention_lightning_indexer"
    selectors = frozenset({"attention_lightning_indexer"})
    kernels = frozenset({"LightningIndexer"})
    axis_names = ("tokens", "cache_blocks")
    axis_groups = ((0,), (1,), (0, 1))
    ceiling = 2
    row_request_slots = (3, 4, 5)
    leaf_tensors = ((0, "q_states"), (2, "indexer_cache"))
    leaf_sequence_args = {5: "seq_lens", 6: "query_lens"}

    def row_topk(self, row: CsvRow) -> int | Refusal:
        return last_dim(row.outputs[0].shape if row.outputs else None, "output 0")

    def target_topk(self, leaf: LeafOp, slots: Sequence[Slot]) -> int | Refusal:
        return last_dim(leaf.outputs[0].shape if leaf.outputs else None, "outputs[0]")

    def extraction(self, kernel: str, query: Slot, cache: Slot, topk: int,
                   grouping: Grouping) -> Extraction | Refusal:
        flat = unwrap(flatten_query(query.shape, "query"))
        if not cache.shape:
            return refuse(Reason.TARGET_UNAVAILABLE,
                          f"cache must be [blocks, ...], got {cache.shape}")
        regime: dict[str, Any] = {
            "kernel": kernel,
            **slot_fields((query, cache)),
            "cache_tail": ",".join(str(d) for d in cache.shape[1:]),
            **query_fields(flat),
            "topk": topk,
            "request_grouping": grouping.key,
        }
        return Extraction(regime, (float(flat.tokens), float(cache.shape[0])), grouping.semantic)
