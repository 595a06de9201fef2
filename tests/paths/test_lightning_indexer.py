"""LightningIndexer (RFC §4.3.1, §7.2) on hand-computable fixtures.

The main regime (1 request, prefill, 32 heads × 128, cache tail 128,1,128, topk 2048,
BF16) holds latency = tokens/8 + blocks/100 on tokens {64, 128, 256} × blocks {1000,
2000}, so every interpolation has an exact expected value.
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
from tests.support.specialized_leaves import li_leaf as corpus_li_leaf
from tests.support.stores import opened_store

OP = "tensor_cast.quant_lightning_indexer.default"
KERNEL = "LightningIndexer"
ENTRY = {"kernel_type": KERNEL, "query_mode": "attention_lightning_indexer"}
UNIQUE = {"kernel_overrides": {KERNEL: {"require_semantic_unique": True}}}
REAL_MAPPING = Path("/work/shared/perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend") / V18_DIR


def li_row(tokens: int, blocks: int, latency: float | str, *, requests: int = 1,
           phase: str = "prefill", heads: int = 32, q_dtype: str = "DT_BF16",
           cache_dtype: str = "DT_BF16", tail: tuple = (128, 1, 128), topk: int = 2048,
           kv: tuple | None = None, **runtime: str) -> Row:
    """A row in the CSV slot order: query, cache, weights, query offsets, KV lengths,
    block table; outputs [T, 1, topk] (indices, values)."""
    extra = {"Runtime phase": phase, "Runtime batch_size": requests, "Runtime topk": topk,
             "Runtime actual_seq_lengths_kv_values": ",".join(map(str, kv)) if kv else "",
             "Runtime metadata_completeness": "complete", **runtime}
    return Row([[tokens, heads, 128], [blocks, *tail], [tokens, heads], [requests], [requests],
                [requests, 1584]],
               [q_dtype, cache_dtype, "DT_BF16", "INT32", "INT32", "INT32"],
               [[tokens, 1, topk], [tokens, 1, topk]], ["INT32", "DT_BF16"], latency,
               extra=extra, core="MIX_AIC")


def li_leaf(tokens: int, blocks: int, *, requests: int | None = 1, phase: str | None = "prefill",
            heads: int = 32, q_dtype: str = "bfloat16", cache_dtype: str = "bfloat16",
            tail: tuple = (128, 1, 128), topk: int | None = 2048, kv: tuple | None = None,
            query: list | None = None, **context: object) -> LeafOp:
    """quant_lightning_indexer(q_states, weights, indexer_cache, topk_limit, tp_world_size,
    seq_lens, query_lens); the request count comes from the sequence-argument shapes."""
    seq = None if requests is None else {"shape": [requests], "dtype": "int32"}
    ctx = {k: v for k, v in {"phase": phase, "kv_lens": kv, **context}.items() if v is not None}
    return LeafOp.from_json({
        "op": OP,
        "args": [{"shape": query or [1, tokens, heads, 128], "dtype": q_dtype},
                 {"shape": [tokens, heads], "dtype": "bfloat16"},
                 {"shape": [blocks, *tail], "dtype": cache_dtype}, 2048, 1, seq, seq],
        "outputs": [] if topk is None else [{"shape": [1, tokens, topk], "dtype": "int32"}],
        "context": ctx,
    })


def grid() -> list[Row]:
    return [li_row(t, b, t / 8 + b / 100) for t in (64, 128, 256) for b in (1000, 2000)]


def make_db(tmp_path: Path, rows: list[Row], *, entry: dict | None = None,
            unique: bool = True, **policies: object) -> str:
    if unique:
        policies["query_selection_policy"] = UNIQUE
    mapping = mapping_doc({OP: entry or ENTRY}, **policies)
    write_version(tmp_path / "data", {KERNEL: rows}, mapping)
    return build_database(tmp_path)


def make_store(tmp_path: Path, rows: list[Row], **options: object):
    return Store.open(make_db(tmp_path, rows, **options))


@pytest.fixture()
def store_db(tmp_path):
    rows = grid() + [
        li_row(192, 1000, 0),  # invalid latency: rejected at ingest
        li_row(128, 2000, 70.0, q_dtype="FLOAT"),
        li_row(128, 2000, 71.0, cache_dtype="INT8"),
        li_row(128, 2000, 72.0, tail=(128, 1, 64)),
        li_row(128, 2000, 73.0, topk=1024),
        li_row(128, 2000, 74.0, phase="mixed"),
        li_row(128, 2000, 75.0, requests=2),
        li_row(4, 2000, 20.0, requests=4, phase="decode", kv=(100, 200, 300, 400),
               **{"Runtime actual_seq_lengths_values": "1,2,3,4"}),  # TND: cumulative
        li_row(4, 2000, 30.0, requests=4, phase="decode", kv=(900, 900, 900, 900)),
        li_row(8, 2000, 40.0, requests=8, phase="decode",
               **{"Runtime metadata_completeness": "profile_shapes_only"}),
    ]
    return make_db(tmp_path, rows)


store = opened_store("store_db")


def lookup(store, leaf: LeafOp, **kw):
    return store.lookup(leaf, "v0.18", **kw)


def test_exact_coordinate_is_measured_by_the_path(store):
    result = lookup(store, li_leaf(128, 2000))
    assert (result.latency_us, result.source) == (36.0, QuerySource.MEASURED)
    assert result.details["method"] == "exact_coordinate"
    assert result.details["exact_owner"] == "path"
    assert "base_attempts" not in result.details


@pytest.mark.parametrize(("tokens", "blocks", "expected", "method", "axes"), [
    (96, 1000, 22.0, "linear_1d", [[64.0, 1000.0], [128.0, 1000.0]]),
    (128, 1500, 31.0, "linear_1d", [[128.0, 1000.0], [128.0, 2000.0]]),
])
def test_one_dimension_first(store, tokens, blocks, expected, method, axes):
    result = lookup(store, li_leaf(tokens, blocks))
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)
    assert result.details["method"] == method
    assert [r["axes"] for r in result.details["matched_rows"]] == axes


def test_guarded_2d_between_both_axes(store):
    result = lookup(store, li_leaf(96, 1500))
    assert result.latency_us == pytest.approx(96 / 8 + 15)
    assert (result.details["method"], result.details["interpolation_dim"]) == ("simplex_2d", 2)
    outcomes = [(p["axes"], p["outcome"]) for p in result.details["interpolation_path"]]
    assert outcomes == [(["tokens"], "insufficient_candidates"),
                        (["cache_blocks"], "insufficient_candidates"),
                        (["tokens", "cache_blocks"], "interpolated")]


def test_max_dimension_blocks_2d_but_keeps_1d(tmp_path):
    limit = {"kernel_overrides": {KERNEL: {"max_interpolation_dim": 1}}}
    with make_store(tmp_path, grid(), interpolation_policy=limit) as s:
        assert lookup(s, li_leaf(96, 1500)).reason is Reason.DIMENSION_BLOCKED
        assert lookup(s, li_leaf(96, 1000)).latency_us == pytest.approx(22.0)


@pytest.mark.parametrize(("leaf", "expected"), [
    (li_leaf(128, 2000, q_dtype="float32"), 70.0),
    (li_leaf(128, 2000, cache_dtype="int8"), 71.0),
    (li_leaf(128, 2000, tail=(128, 1, 64)), 72.0),
    (li_leaf(128, 2000, topk=1024), 73.0),
    (li_leaf(128, 2000, phase="mixed"), 74.0),
    (li_leaf(128, 2000, requests=2), 75.0),
    (li_leaf(128, 2000, requests=None, num_requests=2), 75.0),
    (li_leaf(128, 2000, query=[128, 32, 128]), 36.0),
])
def test_regime_fields_isolate_rows_at_one_coordinate(store, leaf, expected):
    result = lookup(store, leaf)
    assert (result.latency_us, result.source) == (expected, QuerySource.MEASURED)


def test_other_regimes_never_feed_interpolation(store):
    # the FLOAT-query regime holds one point only: no borrowing from the BF16 grid
    result = lookup(store, li_leaf(96, 2000, q_dtype="float32"))
    assert result.reason is Reason.INSUFFICIENT_CANDIDATES


def test_rows_of_one_coordinate_with_other_kv_lengths_are_not_merged(store):
    result = lookup(store, li_leaf(4, 2000, requests=4, phase="decode"))
    assert result.reason is Reason.AMBIGUOUS_DUPLICATES
    assert result.details["attempted_kernels"][0]["ambiguous_rows"] == 2


def test_kv_lengths_pick_one_row(store):
    result = lookup(store, li_leaf(4, 2000, requests=4, phase="decode", kv=(900, 900, 900, 900)))
    assert (result.latency_us, result.source) == (30.0, QuerySource.MEASURED)
    assert result.details["semantic"] == "kv_lens=900,900,900,900"


def test_phase_derived_from_per_request_lengths(store):
    leaf = li_leaf(4, 2000, requests=4, phase=None, kv=(100, 200, 300, 400),
                   query_lens=[1, 1, 1, 1])
    assert lookup(store, leaf).latency_us == 20.0


def test_incomplete_runtime_metadata_is_refused(store):
    result = lookup(store, li_leaf(8, 2000, requests=8, phase="decode"))
    assert result.reason is Reason.REGIME_MISMATCH
    refusals = result.details["attempted_kernels"][0]["path_refusals"]
    assert refusals == {"required_field_missing: Runtime metadata_completeness is "
                        "'profile_shapes_only', not 'complete'": 1}


def test_row_semantics_that_disagree_are_refused(tmp_path):
    rows = [li_row(64, 1000, 1.0),
            li_row(64, 1000, 2.0, **{"Runtime batch_size": 3}),
            li_row(64, 1000, 3.0, phase="decode", kv=(64,),
                   **{"Runtime actual_seq_lengths_values": "64"}),
            li_row(64, 1000, 4.0, **{"Runtime topk": 1024}),
            li_row(64, 1000, 5.0, phase="")]
    with make_store(tmp_path, rows) as s:
        result = lookup(s, li_leaf(64, 1000, heads=64))
    assert result.details["attempted_kernels"][0]["path_refusals"] == {
        "target_unavailable: request counts disagree: input 3=1, input 4=1, input 5=1, "
        "Runtime batch_size=3": 1,
        "target_unavailable: Runtime phase 'decode' contradicts the per-request lengths "
        "(prefill)": 1,
        "target_unavailable: Runtime topk '1024' contradicts the shapes' topk 2048": 1,
        "required_field_missing: row has no Runtime phase": 1}


def test_invalid_latency_row_is_never_a_candidate(store):
    result = lookup(store, li_leaf(192, 1000))
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(34.0)


def test_out_of_range_and_insufficient_candidates(store):
    result = lookup(store, li_leaf(512, 1000))
    assert result.reason is Reason.OUTSIDE_CONVEX_HULL
    path = result.details["attempted_kernels"][0]["interpolation_path"]
    assert path[0]["outcome"] == "outside_range"
    assert result.details["last_geometry"]["outcome"] == "outside_convex_hull"
    assert lookup(store, li_leaf(96, 2000, requests=2)).reason is Reason.INSUFFICIENT_CANDIDATES


def test_regime_mismatch_miss_details(store):
    result = lookup(store, li_leaf(128, 2000, heads=64))
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_axes"] == [128.0, 2000.0]
    assert result.details["target_regime"]["heads"] == 64
    attempt = result.details["attempted_kernels"][0]
    assert attempt["kernel"] == KERNEL
    assert (attempt["kernel_points"], attempt["kernel_regimes"]) == (14, 8)
    assert attempt["path_refusals"] == {"required_field_missing: Runtime metadata_completeness "
                                        "is 'profile_shapes_only', not 'complete'": 1}


def test_success_details(store):
    details = lookup(store, li_leaf(96, 1000)).details
    assert details["kernel_type"] == KERNEL
    assert details["path"] == "attention_lightning_indexer"
    assert details["selector"] == "attention_lightning_indexer"
    assert details["axes"] == {"tokens": 96.0, "cache_blocks": 1000.0}
    assert details["api_path"] is None
    assert details["target_regime"] == {
        "kernel": KERNEL, "activation_dtype": "DT_BF16", "cache_dtype": "DT_BF16",
        "formats": "ND;ND", "cache_tail": "128,1,128", "query_rank": 3, "heads": 32,
        "head_dim": 128, "topk": 2048, "request_grouping": "requests=1,phase=prefill"}
    assert [r["line"] for r in details["matched_rows"]] == [2, 4]


@pytest.mark.parametrize(("leaf", "reason", "words"), [
    (li_leaf(128, 2000, query=[128, 4096]), Reason.TARGET_UNAVAILABLE, "[T, H, D]"),
    (li_leaf(128, 2000, topk=None), Reason.TARGET_UNAVAILABLE, "topk"),
    (li_leaf(128, 2000, requests=None), Reason.UPSTREAM_LEAF_SEMANTICS_MISSING, "requests"),
    (li_leaf(128, 2000, phase=None), Reason.UPSTREAM_LEAF_SEMANTICS_MISSING, "phase"),
    (li_leaf(128, 2000, num_requests=3), Reason.TARGET_UNAVAILABLE, "disagree"),
    (li_leaf(4, 2000, requests=4, phase="prefill", kv=(5, 5, 5, 5), query_lens=[1, 1, 1, 1]),
     Reason.TARGET_UNAVAILABLE, "contradicts"),
])
def test_target_construction_failures(store, leaf, reason, words):
    result = lookup(store, leaf)
    assert result.reason is reason
    assert words in result.details["attempted_kernels"][0]["message"]


def test_base_generic_exact_is_rejected(tmp_path):
    # tc_input_count 1 would let the base input-signature lookup match the query alone and
    # answer 15.0, the median over two caches; the path answers its own regime.
    rows = [li_row(4, 1000, 10.0), li_row(4, 2000, 20.0)]
    with make_store(tmp_path, rows, entry={**ENTRY, "tc_input_count": 1}, unique=False) as s:
        result = lookup(s, li_leaf(4, 2000, query=[4, 32, 128]))
    assert (result.latency_us, result.details["exact_owner"]) == (20.0, "path")


def test_real_quant_mapping_routes_to_the_path(tmp_path):
    real = (REAL_MAPPING / "op_mapping.yaml").read_text()
    rows = [li_row(t, 2000, 999.0, **{"Profiling Average Duration(us)": t / 2}) for t in (64, 128)]
    write_version(tmp_path / "data", {KERNEL: rows}, real)
    with build_store(tmp_path) as s:
        result = lookup(s, li_leaf(96, 2000))
    assert result.latency_us == pytest.approx(48.0)  # prefer_profiling_rows: 32 .. 64
    assert result.details["latency_column"] == "Profiling Average Duration(us)"
    assert result.details["selector"] == "attention_lightning_indexer"


def test_missing_csv_details(tmp_path):
    write_version(tmp_path / "data", {"RmsNorm": [Row([[8, 16]], ["DT_BF16"], [[8, 16]],
                                                      ["DT_BF16"], 1.0)]},
                  mapping_doc({OP: ENTRY}))
    with build_store(tmp_path) as s:
        result = lookup(s, li_leaf(128, 2000))
    assert result.reason is Reason.CSV_NOT_FOUND
    assert result.details["attempted_kernels"] == [{
        "kernel": KERNEL, "reason": "csv_not_found",
        "message": "no LightningIndexer.csv in this version"}]


API = "torch_npu.npu_lightning_indexer"


def api_rows(api: str | None) -> list[Row]:
    extra = {} if api is None else {"Runtime api_path": api}
    return [li_row(t, b, t / 8 + b / 100, **extra) for t in (64, 128) for b in (1000, 2000)]


@pytest.mark.parametrize(("csv_api", "mapping_api"), [(API, API), (None, API), ("other", None)])
def test_api_path_is_compared_only_when_both_state_one(tmp_path, csv_api, mapping_api):
    entry = ENTRY if mapping_api is None else {**ENTRY, "api_path": mapping_api}
    with make_store(tmp_path, api_rows(csv_api), entry=entry) as s:
        result = lookup(s, li_leaf(96, 2000))
    assert result.latency_us == pytest.approx(32.0)
    assert result.details["api_path"] == mapping_api
    assert result.details["target_regime"].get("api_path") == mapping_api


def test_api_path_mismatch_refuses_the_rows(tmp_path):
    entry = {**ENTRY, "api_path": API}
    with make_store(tmp_path, api_rows("torch_npu.npu_quant_lightning_indexer"),
                    entry=entry) as s:
        result = lookup(s, li_leaf(128, 2000))
    assert result.reason is Reason.REGIME_MISMATCH
    attempt = result.details["attempted_kernels"][0]
    assert attempt["message"] == ("every LightningIndexer row was refused by the "
                                  "attention_lightning_indexer path")
    assert attempt["path_refusals"] == {
        "regime_mismatch: CSV API path 'torch_npu.npu_quant_lightning_indexer' differs from "
        "the mapping's torch_npu.npu_lightning_indexer": 4}
    assert result.details["target_regime"]["api_path"] == API


def test_disable_switch_keeps_the_specialised_exact_and_never_the_generic_base(tmp_path):
    """With interpolation off the path's exact coordinate still answers (its base lookup);
    the generic input-signature lookup, which would merge both caches, never does."""
    rows = [li_row(4, 1000, 10.0), li_row(4, 2000, 20.0)]
    with make_store(tmp_path, rows, entry={**ENTRY, "tc_input_count": 1}, unique=False) as s:
        exact = s.lookup(li_leaf(4, 2000, query=[4, 32, 128]), "v0.18", interpolation=False)
        between = s.lookup(li_leaf(4, 1500, query=[4, 32, 128]), "v0.18", interpolation=False)
    assert (exact.latency_us, exact.details["method"]) == (20.0, "exact_coordinate")
    assert between.latency_us is None
    assert between.reason is Reason.INTERPOLATION_DISABLED


# ---- End to end on ../shared/perfdb v0.18 (expected latencies from
# tests.support.corpus_regimes' reading of the CSVs) ----------------------------------


@pytest.fixture(scope="module")
def li_prefill() -> dict[int, list[tuple[float, str]]]:
    return regime_rows("LightningIndexer", 32, 1, "prefill", 1766, (PROFILING, AVERAGE))


@requires_perfdb
def test_li_measured_coordinate(perfdb_store, li_prefill):
    [(expected, _)] = li_prefill[1024]
    result = perfdb_store.lookup(corpus_li_leaf(1024), "v0.18")
    assert (result.latency_us, result.source) == (expected, QuerySource.MEASURED)
    assert result.details["latency_column"] == PROFILING
    assert result.details["exact_owner"] == "path"


@requires_perfdb
def test_li_interpolated_coordinate(perfdb_store, li_prefill):
    result = perfdb_store.lookup(corpus_li_leaf(1000), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(between(li_prefill, 768, 1024, 1000))
    assert result.details["method"] == "linear_1d"


@requires_perfdb
def test_li_decode_needs_kv_lengths_to_pick_a_row(perfdb_store):
    rows = regime_rows("LightningIndexer", 32, 8, "decode", 1766, (PROFILING, AVERAGE))[8]
    [expected] = [latency for latency, kv in rows if kv == ",".join(["4096"] * 8)]
    picked = perfdb_store.lookup(corpus_li_leaf(8, requests=8, phase="decode", kv=[4096] * 8),
                                 "v0.18")
    assert (picked.latency_us, picked.source) == (expected, QuerySource.MEASURED)
    unpicked = perfdb_store.lookup(corpus_li_leaf(8, requests=8, phase="decode"), "v0.18")
    assert unpicked.reason is Reason.AMBIGUOUS_DUPLICATES


@requires_perfdb
def test_li_misses(perfdb_store):
    assert perfdb_store.lookup(corpus_li_leaf(99999), "v0.18").reason is Reason.OUTSIDE_CONVEX_HULL
    foreign = perfdb_store.lookup(corpus_li_leaf(1024, heads=48), "v0.18")
    assert foreign.reason is Reason.REGIME_MISMATCH
    attempt = foreign.details["attempted_kernels"][0]
    assert (attempt["kernel_points"], attempt["kernel_regimes"]) == (1340, 33)
    assert sum(attempt["path_refusals"].values()) == 7
