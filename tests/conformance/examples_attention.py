"""Examples of the attention paths: attention_special (FusedInferAttentionScore),
attention_lightning_indexer and attention_sparse_sharedkv (layouts as in
tests/paths/test_attention_fia.py and the other tests/paths/ files)."""

from __future__ import annotations

from typing import Any

from profstore.model.result import Reason

from tests.conformance.examples_compute import BF16, FP32, tensor
from tests.conformance.model import Lands, Miss, Mutation, PathExample
from tests.support.perfdb import Row

REGIME_MISMATCH = Miss(Reason.REGIME_MISMATCH)

# ---- attention_special: FusedInferAttentionScore, TND decode, paged cache --------------

FIA_OP, FIA_KERNEL = "tensor_cast.attention.default", "FusedInferAttentionScore"
FIA_SLOTS, MASK_SLOT, TABLE_SLOT = 15, 4, 14


def fia_row(seq: int, latency: float, heads: int = 4) -> Row:
    """One decode request: query (1, heads, 128), paged cache (512 blocks, 128, 128),
    compressed causal mask, block table; the v0.18 Runtime columns."""
    inputs: list[list[int] | None] = [None] * FIA_SLOTS
    inputs[0], inputs[1], inputs[2] = [1, heads, 128], [512, 128, 128], [512, 128, 128]
    inputs[MASK_SLOT], inputs[TABLE_SLOT] = [2048, 2048], [1, 64]
    dtypes = ["DT_UNDEFINED"] * FIA_SLOTS
    dtypes[0] = dtypes[1] = dtypes[2] = BF16
    dtypes[MASK_SLOT], dtypes[TABLE_SLOT] = "INT8", "INT32"
    runtime = {"Runtime avg_seq_len": f"{seq:.6f}", "Runtime batch_size": 1,
               "Runtime num_heads": heads, "Runtime num_key_value_heads": 1,
               "Runtime sparse_mode": 3, "Runtime input_layout": "TND",
               "Runtime metadata_completeness": "runtime_values"}
    return Row(inputs, dtypes, [[1, heads, 128], None], [BF16, FP32], latency,
               formats=["ND" if s is not None else "NULL" for s in inputs], extra=runtime)


def fia_leaf(seq: int) -> dict[str, Any]:
    """attention(q, key, value, mask, block_table, query_start_loc, seq_lens, query_lens)."""
    cache = tensor([64, 128, 1, 128])
    return {"op": FIA_OP, "args": [tensor([1, 512]), cache, cache, None,
                                   tensor([1, 8], "int32"), None,
                                   tensor([1], "int32", values=[seq]), None],
            "outputs": [tensor([1, 512])]}


ATTENTION_SPECIAL = PathExample(
    path="attention_special", kernel=FIA_KERNEL,
    entries={FIA_OP: {"kernel_type": FIA_KERNEL, "query_mode": "attention_special"}},
    rows=(fia_row(256, 10.0), fia_row(1024, 20.0)), foreign=(fia_row(1024, 21.0, heads=8),),
    leaf=fia_leaf(1024), hit=1,
    mutations=(
        Mutation("heads", ("heads",), ((("args", 0, "shape"), [1, 1024]),
                                       (("outputs", 0, "shape"), [1, 1024])), Lands(0)),
        Mutation("kv_heads", ("kv_heads",), ((("args", 1, "shape"), [64, 128, 2, 128]),
                                             (("args", 2, "shape"), [64, 128, 2, 128])),
                 REGIME_MISMATCH),
        Mutation("cache_dtype", ("cache_dtype",), ((("args", 1, "dtype"), "int8"),
                                                   (("args", 2, "dtype"), "int8")),
                 REGIME_MISMATCH),
    ))

# ---- attention_lightning_indexer: LightningIndexer, one prefill request ---------------

LI_OP, LI_KERNEL = "tensor_cast.quant_lightning_indexer.default", "LightningIndexer"


def li_row(tokens: int, latency: float, topk: int = 2048) -> Row:
    """CSV slots: query, cache, weights, query offsets, KV lengths, block table."""
    extra = {"Runtime phase": "prefill", "Runtime batch_size": 1, "Runtime topk": topk,
             "Runtime actual_seq_lengths_kv_values": "",
             "Runtime metadata_completeness": "complete"}
    return Row([[tokens, 32, 128], [2000, 128, 1, 128], [tokens, 32], [1], [1], [1, 1584]],
               [BF16, BF16, BF16, "INT32", "INT32", "INT32"],
               [[tokens, 1, topk], [tokens, 1, topk]], ["INT32", BF16], latency,
               extra=extra, core="MIX_AIC")


def li_leaf(tokens: int) -> dict[str, Any]:
    """quant_lightning_indexer(q_states, weights, indexer_cache, topk_limit, tp_world_size,
    seq_lens, query_lens)."""
    lens = tensor([1], "int32")
    return {"op": LI_OP, "args": [tensor([1, tokens, 32, 128]), tensor([tokens, 32]),
                                  tensor([2000, 128, 1, 128]), 2048, 1, lens, lens],
            "outputs": [tensor([1, tokens, 2048], "int32")], "context": {"phase": "prefill"}}


ATTENTION_LIGHTNING_INDEXER = PathExample(
    path="attention_lightning_indexer", kernel=LI_KERNEL,
    entries={LI_OP: {"kernel_type": LI_KERNEL, "query_mode": "attention_lightning_indexer"}},
    rows=(li_row(64, 28.0), li_row(128, 36.0)), foreign=(li_row(128, 73.0, topk=1024),),
    leaf=li_leaf(128), hit=1,
    mutations=(
        Mutation("topk", ("topk",), ((("outputs", 0, "shape"), [1, 128, 1024]),), Lands(0)),
        Mutation("cache_dtype", ("cache_dtype",), ((("args", 2, "dtype"), "int8"),),
                 REGIME_MISMATCH),
        Mutation("cache_tail", ("cache_tail",), ((("args", 2, "shape"), [2000, 128, 1, 64]),),
                 REGIME_MISMATCH),
        Mutation("heads", ("heads",), ((("args", 0, "shape"), [1, 128, 16, 128]),),
                 REGIME_MISMATCH),
    ))

# ---- attention_sparse_sharedkv: SparseFlashAttention, one prefill request --------------

SFA_OP, SFA_KERNEL = "tensor_cast.sparse_attn_sharedkv.default", "SparseFlashAttention"


def sfa_row(tokens: int, latency: float, blocks: int = 1000, phase: str = "prefill") -> Row:
    """CSV slots: query, KV cache (key, value), topk indices, block table, query offsets,
    KV lengths, query rope, cache rope."""
    cache = [blocks, 128, 1, 512]
    extra = {"Runtime phase": phase, "Runtime batch_size": 1, "Runtime topk": 2048,
             "Runtime actual_seq_lengths_kv_values": "", "Runtime sparse_block_size": 1,
             "Runtime sparse_indices_pattern": "uniform",
             "Runtime metadata_completeness": "complete"}
    return Row([[tokens, 16, 512], cache, cache, [tokens, 1, 2048], [1, 1584], [1], [1],
                [tokens, 16, 64], [blocks, 128, 1, 64]],
               [BF16, BF16, BF16, "INT32", "INT32", "INT32", "INT32", BF16, BF16],
               [[tokens, 16, 512]], [BF16], latency, extra=extra, core="MIX_AIC")


def sfa_leaf(tokens: int) -> dict[str, Any]:
    """sparse_attn_sharedkv(q, kv, attn_sink, topk_indices, softmax_scale, head_dim,
    kv_dependency); the request grouping comes from the context alone."""
    return {"op": SFA_OP, "args": [tensor([1, tokens, 16, 512]), tensor([1000, 128, 1, 512]),
                                   tensor([16], "float32"),
                                   tensor([1, tokens, 1, 2048], "int32"), 0.04, 512, None],
            "outputs": [tensor([1, tokens, 16, 512])],
            "context": {"num_requests": 1, "phase": "prefill"}}


ATTENTION_SPARSE_SHAREDKV = PathExample(
    path="attention_sparse_sharedkv", kernel=SFA_KERNEL,
    entries={SFA_OP: {"kernel_type": SFA_KERNEL, "query_mode": "attention_sparse_sharedkv"}},
    rows=(sfa_row(64, 26.0), sfa_row(128, 42.0)),
    foreign=(sfa_row(128, 82.0, blocks=2000), sfa_row(128, 84.0, phase="mixed")),
    leaf=sfa_leaf(128), hit=1,
    mutations=(
        Mutation("cache_shape", ("cache_shape",), ((("args", 1, "shape"), [2000, 128, 1, 512]),),
                 Lands(0)),
        Mutation("phase", ("sparse_phase", "request_grouping"),
                 ((("context", "phase"), "mixed"),), Lands(1)),
        Mutation("topk", ("topk",), ((("args", 3, "shape"), [1, 128, 1, 1024]),),
                 REGIME_MISMATCH),
    ))

ATTENTION_EXAMPLES = (ATTENTION_SPECIAL, ATTENTION_LIGHTNING_INDEXER, ATTENTION_SPARSE_SHAREDKV)
