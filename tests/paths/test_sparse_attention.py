"""SparseFlashAttention for the canonical sparse_attn_sharedkv leaf (RFC §4.3.2, §7.2).

The main regime (1 request, prefill, 16 heads × 512, cache [1000, 128, 1, 512], topk 2048,
BF16) holds latency = tokens/4 + 10 at tokens {64, 128, 256}. The fixture mapping does
not set require_semantic_unique, to show that rows with different KV lengths still never
merge; the real v0.18 mapping (which sets it) is exercised separately.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.corpus_regimes import AVERAGE, PROFILING, between, regime_rows
from tests.support.markers import requires_perfdb
from tests.support.perfdb import (
    V18_DIR,
    Row,
    build_database,
    build_store,
    mapping_doc,
    write_version,
)
from tests.support.specialized_leaves import sfa_leaf as corpus_sfa_leaf
from tests.support.stores import opened_store

OP = "tensor_cast.sparse_attn_sharedkv.default"
KERNEL = "SparseFlashAttention"
ENTRY = {"kernel_type": KERNEL, "query_mode": "attention_sparse_sharedkv"}
PREFILL_1 = {"num_requests": 1, "phase": "prefill"}
REAL_MAPPING = Path("/work/shared/perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend") / V18_DIR
KV_A, KV_B, KV_C = (100, 200, 300, 400), (900, 900, 900, 900), (50, 50, 50, 50)


def sfa_row(tokens: int, latency: float | str, *, requests: int = 1, phase: str = "prefill",
            heads: int = 16, q_dtype: str = "DT_BF16", cache_dtype: str = "DT_BF16",
            blocks: int = 1000, topk: int = 2048, kv: tuple | None = None,
            runtime: bool = True, **extra: object) -> Row:
    """A row in the CSV slot order: query, KV cache (key, value), topk indices, block table,
    query offsets, KV lengths, query rope, cache rope."""
    cache = [blocks, 128, 1, 512]
    columns = {"Runtime phase": phase, "Runtime batch_size": requests, "Runtime topk": topk,
               "Runtime actual_seq_lengths_kv_values": ",".join(map(str, kv)) if kv else "",
               "Runtime sparse_block_size": 1, "Runtime sparse_indices_pattern": "uniform",
               "Runtime metadata_completeness": "complete", **extra} if runtime else {}
    return Row([[tokens, heads, 512], cache, cache, [tokens, 1, topk], [requests, 1584],
                [requests], [requests], [tokens, heads, 64], [blocks, 128, 1, 64]],
               [q_dtype, cache_dtype, cache_dtype, "INT32", "INT32", "INT32", "INT32", q_dtype,
                cache_dtype],
               [[tokens, heads, 512]], [q_dtype], latency, extra=columns, core="MIX_AIC")


def sfa_leaf(tokens: int, *, heads: int = 16, q_dtype: str = "bfloat16",
             cache_dtype: str = "bfloat16", blocks: int = 1000, topk: int | None = 2048,
             query: list | None = None, context: dict | None = None) -> LeafOp:
    """sparse_attn_sharedkv(q, kv, attn_sink, topk_indices, softmax_scale, head_dim,
    kv_dependency); request grouping only in the context."""
    topk_indices = None if topk is None else {"shape": [1, tokens, 1, topk], "dtype": "int32"}
    return LeafOp.from_json({
        "op": OP,
        "args": [{"shape": query or [1, tokens, heads, 512], "dtype": q_dtype},
                 {"shape": [blocks, 128, 1, 512], "dtype": cache_dtype},
                 {"shape": [heads], "dtype": "float32"}, topk_indices, 0.04, 512, None],
        "outputs": [{"shape": [1, tokens, heads, 512], "dtype": q_dtype}],
        "context": PREFILL_1 if context is None else context,
    })


def decode(kv: tuple | None = None) -> dict:
    return {"num_requests": 4, "phase": "decode", **({"kv_lens": list(kv)} if kv else {})}


def make_db(tmp_path: Path, rows: list[Row], entry: dict | None = None) -> str:
    write_version(tmp_path / "data", {KERNEL: rows}, mapping_doc({OP: entry or ENTRY}))
    return build_database(tmp_path)


def make_store(tmp_path: Path, rows: list[Row], entry: dict | None = None):
    return Store.open(make_db(tmp_path, rows, entry))


@pytest.fixture()
def store_db(tmp_path):
    rows = [sfa_row(t, t / 4 + 10) for t in (64, 128, 256)] + [
        sfa_row(192, -5),  # invalid latency: rejected at ingest
        sfa_row(128, 80.0, q_dtype="FLOAT"),
        sfa_row(128, 81.0, cache_dtype="INT8"),
        sfa_row(128, 82.0, blocks=2000),
        sfa_row(128, 83.0, topk=1024),
        sfa_row(128, 84.0, phase="mixed"),
        sfa_row(128, 85.0, requests=2),
        sfa_row(128, 86.0, **{"Runtime sparse_block_size": 16}),
        sfa_row(4, 20.0, requests=4, phase="decode", kv=KV_A),
        sfa_row(4, 30.0, requests=4, phase="decode", kv=KV_B),
        sfa_row(4, 40.0, requests=4, phase="decode", kv=KV_C),
        sfa_row(4, 44.0, requests=4, phase="decode", kv=KV_C),
    ]
    return make_db(tmp_path, rows)


store = opened_store("store_db")


def lookup(store, leaf: LeafOp):
    return store.lookup(leaf, "v0.18")


@pytest.mark.parametrize("query", [[1, 128, 16, 512], [2, 64, 16, 512], [128, 16, 512]])
def test_canonical_leaf_tokens_are_b_times_s(store, query):
    result = lookup(store, sfa_leaf(128, query=query))
    assert (result.latency_us, result.source) == (42.0, QuerySource.MEASURED)
    assert (result.details["method"], result.details["exact_owner"]) == ("exact_coordinate",
                                                                         "path")


def test_token_only_1d(store):
    result = lookup(store, sfa_leaf(96))
    assert result.latency_us == pytest.approx(34.0)
    assert (result.details["method"], result.details["interpolation_dim"]) == ("linear_1d", 1)
    assert [p["axes"] for p in result.details["interpolation_path"]] == [["tokens"]]


@pytest.mark.parametrize(("leaf", "expected"), [
    (sfa_leaf(128, q_dtype="float32"), 80.0),
    (sfa_leaf(128, cache_dtype="int8"), 81.0),
    (sfa_leaf(128, blocks=2000), 82.0),
    (sfa_leaf(128, topk=1024), 83.0),
    (sfa_leaf(128, context={"num_requests": 1, "phase": "mixed"}), 84.0),
    (sfa_leaf(128, context={"num_requests": 2, "phase": "prefill"}), 85.0),
])
def test_regime_fields_isolate_rows_at_one_coordinate(store, leaf, expected):
    result = lookup(store, leaf)
    assert (result.latency_us, result.source) == (expected, QuerySource.MEASURED)


def test_cache_blocks_are_not_an_axis(store):
    result = lookup(store, sfa_leaf(128, blocks=1500))
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_regime"]["cache_shape"] == "1500,128,1,512"


def test_block_sparse_rows_are_refused(store):
    result = lookup(store, sfa_leaf(128, heads=8))
    refusals = result.details["attempted_kernels"][0]["path_refusals"]
    assert refusals == {"regime_mismatch: Runtime sparse_block_size 16 selects blocks, "
                        "not tokens": 1}


def test_no_median_across_kv_lengths(store):
    result = lookup(store, sfa_leaf(4, context=decode()))
    assert result.reason is Reason.AMBIGUOUS_DUPLICATES
    assert result.details["attempted_kernels"][0]["ambiguous_rows"] == 4


@pytest.mark.parametrize(("kv", "expected", "count"), [(KV_A, 20.0, 1), (KV_B, 30.0, 1),
                                                       (KV_C, 42.0, 2)])
def test_kv_lengths_pick_rows_and_true_duplicates_merge(store, kv, expected, count):
    result = lookup(store, sfa_leaf(4, context=decode(kv)))
    assert result.latency_us == expected
    assert result.details["candidate_count"] == count
    assert result.details["semantic"] == "kv_lens=" + ",".join(map(str, kv))


@pytest.mark.parametrize(("context", "missing"), [({}, "num_requests"),
                                                  ({"num_requests": 1}, "phase"),
                                                  ({"phase": "prefill"}, "num_requests")])
def test_missing_leaf_semantics_fail_closed(store, context, missing):
    result = lookup(store, sfa_leaf(128, context=context))
    assert result.reason is Reason.UPSTREAM_LEAF_SEMANTICS_MISSING
    assert result.details["attempted_kernels"][0]["target_fields"] == {"missing": missing}


def test_phase_derived_from_per_request_lengths(store):
    context = {"query_lens": [1, 1, 1, 1], "kv_lens": list(KV_A)}
    assert lookup(store, sfa_leaf(4, context=context)).latency_us == 20.0


def test_rows_without_runtime_semantics_fail_closed(tmp_path):
    rows = [sfa_row(t, t / 4 + 10, runtime=False) for t in (64, 128)]
    with make_store(tmp_path, rows) as s:
        result = lookup(s, sfa_leaf(96))
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["attempted_kernels"][0]["path_refusals"] == {
        "required_field_missing: row has no Runtime phase": 2}


def test_specialized_exact_skips_the_base_signature_lookup(tmp_path):
    # with tc_input_count 1 the base lookup would match the query alone: median 62.0
    rows = [sfa_row(128, 42.0), sfa_row(128, 82.0, blocks=2000)]
    with make_store(tmp_path, rows, {**ENTRY, "tc_input_count": 1}) as s:
        result = lookup(s, sfa_leaf(128, query=[128, 16, 512]))
    assert (result.latency_us, result.details["exact_owner"]) == (42.0, "path")


def test_real_mapping_requires_unique_rows(tmp_path):
    real = (REAL_MAPPING / "op_mapping.yaml").read_text()
    rows = [sfa_row(4, 40.0, requests=4, phase="decode", kv=KV_C),
            sfa_row(4, 44.0, requests=4, phase="decode", kv=KV_C)]
    write_version(tmp_path / "data", {KERNEL: rows}, real)
    with build_store(tmp_path) as s:
        result = lookup(s, sfa_leaf(4, context=decode(KV_C)))
    assert result.reason is Reason.AMBIGUOUS_DUPLICATES


def test_invalid_latency_row_is_never_a_candidate(store):
    result = lookup(store, sfa_leaf(192))
    assert (result.latency_us, result.source) == (pytest.approx(58.0), QuerySource.INTERPOLATED)


def test_out_of_range_and_insufficient_candidates(store):
    result = lookup(store, sfa_leaf(512))
    assert result.reason is Reason.OUTSIDE_RANGE
    assert result.details["last_geometry"]["message"] == (
        "target tokens 512 above the largest measured tokens 256")
    leaf = sfa_leaf(96, context={"num_requests": 2, "phase": "prefill"})
    assert lookup(store, leaf).reason is Reason.INSUFFICIENT_CANDIDATES


def test_regime_mismatch_miss_details(store):
    result = lookup(store, sfa_leaf(128, heads=8))
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_axes"] == [128.0]
    attempt = result.details["attempted_kernels"][0]
    assert (attempt["kernel"], attempt["kernel_points"], attempt["kernel_regimes"]) == (
        KERNEL, 13, 8)


def test_success_details(store):
    details = lookup(store, sfa_leaf(96)).details
    assert (details["path"], details["axes"], details["api_path"]) == (
        "attention_sparse_sharedkv", {"tokens": 96.0}, None)
    assert details["target_regime"] == {
        "kernel": KERNEL, "activation_dtype": "DT_BF16", "cache_dtype": "DT_BF16",
        "formats": "ND;ND", "query_rank": 3, "heads": 16, "head_dim": 512,
        "cache_shape": "1000,128,1,512", "topk": 2048, "sparse_phase": "prefill",
        "request_grouping": "requests=1,phase=prefill"}
    assert [r["line"] for r in details["matched_rows"]] == [2, 3]


@pytest.mark.parametrize(("leaf", "words"), [
    (sfa_leaf(128, query=[128, 8192]), "[T, H, D]"),
    (sfa_leaf(128, topk=None), "argument 3 (topk_indices) must be a tensor"),
    (sfa_leaf(128, context={"num_requests": 2, "kv_lens": [1, 2, 3]}), "disagree"),
])
def test_target_construction_failures(store, leaf, words):
    result = lookup(store, leaf)
    assert result.reason is Reason.TARGET_UNAVAILABLE
    assert words in result.details["attempted_kernels"][0]["message"]


def test_missing_csv_details(tmp_path):
    rows = {"RmsNorm": [Row([[8, 16]], ["DT_BF16"], [[8, 16]], ["DT_BF16"], 1.0)]}
    write_version(tmp_path / "data", rows, mapping_doc({OP: ENTRY}))
    with build_store(tmp_path) as s:
        result = lookup(s, sfa_leaf(128))
    assert result.reason is Reason.CSV_NOT_FOUND
    assert result.details["attempted_kernels"][0]["message"] == (
        "no SparseFlashAttention.csv in this version")


# ---- End to end on ../shared/perfdb v0.18 (expected latencies from
# tests.support.corpus_regimes' reading of the CSVs) ----------------------------------


@pytest.fixture(scope="module")
def sfa_prefill() -> dict[int, list[tuple[float, str]]]:
    return regime_rows("SparseFlashAttention", 16, 1, "prefill", 1766, (AVERAGE, PROFILING))


@requires_perfdb
def test_sfa_measured_coordinate(perfdb_store, sfa_prefill):
    [(expected, _)] = sfa_prefill[512]
    result = perfdb_store.lookup(corpus_sfa_leaf(512), "v0.18")
    assert (result.latency_us, result.source) == (expected, QuerySource.MEASURED)
    assert result.details["target_regime"]["sparse_phase"] == "prefill"


@requires_perfdb
def test_sfa_interpolated_coordinate(perfdb_store, sfa_prefill):
    result = perfdb_store.lookup(corpus_sfa_leaf(600), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(between(sfa_prefill, 512, 768, 600))


@requires_perfdb
def test_sfa_duplicate_coordinate_is_protected(perfdb_store, sfa_prefill):
    # two rows measured at 1024 tokens disagree: never a median, and never a vertex
    assert len(sfa_prefill[1024]) == 2
    assert perfdb_store.lookup(corpus_sfa_leaf(1024), "v0.18").reason is Reason.AMBIGUOUS_DUPLICATES
    result = perfdb_store.lookup(corpus_sfa_leaf(1000), "v0.18")
    assert result.latency_us == pytest.approx(between(sfa_prefill, 768, 1536, 1000))
    assert result.details["interpolation_path"][0]["ambiguous_excluded"] == 2


@requires_perfdb
def test_sfa_misses(perfdb_store, sfa_prefill):
    above = perfdb_store.lookup(corpus_sfa_leaf(99999), "v0.18")
    assert above.reason is Reason.OUTSIDE_RANGE
    assert above.details["last_geometry"]["message"].endswith(
        f"above the largest measured tokens {max(sfa_prefill)}")
    assert perfdb_store.lookup(corpus_sfa_leaf(1024, heads=12), "v0.18").reason \
        is Reason.REGIME_MISMATCH
    bare = perfdb_store.lookup(corpus_sfa_leaf(1024, context={}), "v0.18")
    assert bare.reason is Reason.UPSTREAM_LEAF_SEMANTICS_MISSING
