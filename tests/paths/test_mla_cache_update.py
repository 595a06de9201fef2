"""MLA cache update (scatter_nd_update_mla on ScatterNdUpdate) on a hand-computable fixture
(RFC §4.4.3, §7.2).

CSV order is (cache, index, update). Cache (4096, 128) BF16 with INT32 indices is measured
at tokens 2 → 5, 8 → 8 and 10 (update (8, 128)) and 12 (update (8, 1, 128)), 32 → 20:
the three tokens-8 rows share one path coordinate (median 10) while the base exact key
tells the two update shapes apart (median 9 for (8, 128), 12 for (8, 1, 128)).
"""

from __future__ import annotations

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.normalizers import normalize_target_inputs
from profstore.model.result import QuerySource, Reason
from profstore.paths.base import TargetContext
from profstore.paths.mla_cache_update import MlaCacheUpdatePath

from tests.support.corpus_rows import (
    PROFILING_FIRST,
    CsvDict,
    expected_measured,
    read_rows,
    select,
    shapes,
)
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.specialized_leaves import mla as corpus_mla
from tests.support.stores import opened_store

OP = "tensor_cast.scatter_nd_update_mla.default"
KERNEL, AICORE = "ScatterNdUpdate", "ScatterNdUpdateAiCore"


def csv_row(cache: int, tokens: int, latency: float | str, *, index: str = "INT32",
            update: list[int] | None = None) -> Row:
    inputs = [[cache, 128], [tokens, 1], update or [tokens, 128]]
    return Row(inputs, ["DT_BF16", index, "DT_BF16"], [[cache, 128]], ["DT_BF16"], latency)


ROWS = [
    csv_row(4096, 2, 5.0), csv_row(4096, 8, 8.0), csv_row(4096, 8, 10.0),
    csv_row(4096, 8, 12.0, update=[8, 1, 128]), csv_row(4096, 32, 20.0),
    csv_row(8192, 2, 50.0), csv_row(8192, 32, 80.0),   # another complete cache shape
    csv_row(2048, 8, 7.0),                            # a one-point regime
    csv_row(4096, 16, "0"),                           # rejected at ingest
]
AICORE_ROWS = [csv_row(4096, 1, 3.0, index="INT64"), csv_row(4096, 4, 6.0, index="INT64")]


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("mla")
    mapping = mapping_doc({OP: {"kernel_type": KERNEL, "alternate_kernel_types": [AICORE],
                                "query_mode": "scatter_nd_update_mla"}})
    write_version(root / "data", {KERNEL: ROWS, AICORE: AICORE_ROWS}, mapping)
    return build_database(root)


store = opened_store("store_db", scope="module")


def mla(tokens: int, *, cache: int = 4096, index: list[int] | None = None,
        update: list[int] | None = None, index_dtype: str = "int32") -> LeafOp:
    """TensorCast order: (kv/update, kv_cache, slot_mapping, window_size, seq_lens)."""
    return LeafOp.from_json({"op": OP, "args": [
        {"shape": update or [tokens, 128], "dtype": "bfloat16"},
        {"shape": [cache, 128], "dtype": "bfloat16"},
        {"shape": index or [tokens, 1], "dtype": index_dtype},
        128, {"shape": [2], "dtype": "int32", "values": [3, 5]},
    ], "outputs": [{"shape": [cache, 128], "dtype": "bfloat16"}]})


def test_normaliser_reorders_tensorcast_arguments_to_csv_order():
    update, cache, index, seq = mla(8).tensor_inputs()
    assert normalize_target_inputs(KERNEL, (update, cache, index, seq)) == (cache, index, update)
    assert normalize_target_inputs(AICORE, (update, cache, index)) == (cache, index, update)
    assert normalize_target_inputs(KERNEL, (cache, index, update)) == (cache, index, update)


def test_reordered_arguments_meet_the_base_exact_key(store):
    result = store.lookup(mla(8), "v0.18")
    assert (result.latency_us, result.source) == (9.0, QuerySource.MEASURED)
    assert result.details["method"] == "base_exact"
    assert result.details["exact_key"] == "x3|4096,128:DT_BF16;8,1:INT32;8,128:DT_BF16"
    three_d = store.lookup(mla(8, update=[8, 1, 128]), "v0.18")
    assert (three_d.latency_us, three_d.details["method"]) == (12.0, "base_exact")


def test_specialized_exact_after_a_base_miss(store):
    result = store.lookup(mla(8, index=[8]), "v0.18")
    assert (result.latency_us, result.source) == (10.0, QuerySource.MEASURED)
    d = result.details
    assert (d["method"], d["path"], d["axes"]) == ("exact_coordinate", "scatter_nd_update_mla",
                                                   {"tokens": 8.0})
    assert d["duplicates"] == {"count": 3, "min": 8.0, "max": 12.0, "aggregation": "median"}
    assert [a["reason"] for a in d["base_attempts"]] == ["no_exact_match", "no_exact_match"]


def test_tokens_flatten_all_but_the_last_update_dimension(store):
    result = store.lookup(mla(8, index=[8], update=[4, 2, 128]), "v0.18")
    assert result.details["axes"] == {"tokens": 8.0}
    assert result.latency_us == 10.0


def test_1d_interpolation_with_success_details(store):
    result = store.lookup(mla(20), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(15.0)
    d = result.details
    assert (d["method"], d["interpolation_dim"], d["kernel_type"]) == ("linear_1d", 1, KERNEL)
    assert d["boundary"] == {"lower": 8.0, "upper": 32.0, "min": 2.0, "max": 32.0}
    assert d["candidate_count"] == 3
    assert (d["cache_shape"], d["update_tail"]) == ("4096,128", 128)
    assert d["target_regime"]["dtypes"] == "DT_BF16;INT32;DT_BF16"
    assert d["target_regime"]["formats"] == "ND;ND;ND"


def test_complete_cache_shape_isolates_rows(store):
    assert store.lookup(mla(16, cache=8192), "v0.18").latency_us == pytest.approx(64.0)
    assert store.lookup(mla(16), "v0.18").latency_us == pytest.approx(10 + 10 * 8 / 24)
    other = store.lookup(mla(16, cache=6144), "v0.18")
    assert other.reason is Reason.REGIME_MISMATCH


def test_alternate_kernel_after_the_primary_misses(store):
    result = store.lookup(mla(2, index_dtype="int64"), "v0.18")
    assert result.latency_us == pytest.approx(4.0)
    assert (result.details["kernel_type"], result.details["fallback_from"]) == (AICORE, KERNEL)


def test_outside_range_miss_details(store):
    result = store.lookup(mla(64), "v0.18")
    assert result.reason is Reason.OUTSIDE_RANGE
    d = result.details
    assert d["target_axes"] == [64.0]
    assert d["target_regime"]["cache_shape"] == "4096,128"
    assert [(a["kernel"], a["reason"]) for a in d["attempted_kernels"]] == [
        (KERNEL, "outside_range"), (AICORE, "regime_mismatch")]
    assert d["last_geometry"]["message"] == "target tokens 64 above the largest measured tokens 32"
    assert store.lookup(mla(1), "v0.18").reason is Reason.OUTSIDE_RANGE


def test_single_point_regime_is_insufficient(store):
    assert store.lookup(mla(16, cache=2048), "v0.18").reason is Reason.INSUFFICIENT_CANDIDATES


def test_invalid_latency_row_is_rejected_and_neighbours_answer(store):
    result = store.lookup(mla(16), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.details["matched_rows"][0]["axes"] == [8.0]


@pytest.mark.parametrize(("args", "reason"), [
    ([{"shape": [8, 128], "dtype": "bfloat16"}, {"shape": [4096, 128], "dtype": "bfloat16"},
      None], Reason.REQUIRED_FIELD_MISSING),
    ([{"shape": [128], "dtype": "bfloat16"}, {"shape": [4096, 128], "dtype": "bfloat16"},
      {"shape": [8], "dtype": "int32"}], Reason.TARGET_UNAVAILABLE),
], ids=["no_index", "rank1_update"])
def test_target_construction_failures(store, args, reason):
    result = store.lookup(LeafOp.from_json({"op": OP, "args": args}), "v0.18")
    assert result.latency_us is None
    assert result.reason is reason


def test_base_owns_exact_for_cache_updates():
    assert MlaCacheUpdatePath().exact_owner_for(mla(8)) is False


def test_the_path_reads_a_call_in_kernel_order_as_the_base_exact_lookup_does(store):
    """One ScatterNdUpdate reordering: a call already in kernel order (cache, index, update)
    lands on the same regime and tokens as the TensorCast-ordered call, and answers the
    same measured 8-token coordinate (median of 8 and 10 → 9 on the base exact key)."""
    tensorcast_order = mla(8)
    update, cache, index, seq = tensorcast_order.tensor_inputs()
    kernel_order = LeafOp.from_json({"op": OP, "args": [
        cache.to_json(), index.to_json(), update.to_json(), 128, seq.to_json()],
        "outputs": [o.to_json() for o in tensorcast_order.outputs]})
    answers = [store.lookup(leaf, "v0.18") for leaf in (tensorcast_order, kernel_order)]
    assert [(a.latency_us, a.source) for a in answers] == [(9.0, QuerySource.MEASURED)] * 2
    profile = store.profile("v0.18")
    entry = profile.mapping.entry(OP)
    ctx = TargetContext(entry, KERNEL, profile.mapping.policy(KERNEL))
    path = MlaCacheUpdatePath()
    regimes = [path.target_regime(leaf, ctx) for leaf in (tensorcast_order, kernel_order)]
    assert regimes[0] == regimes[1]
    assert regimes[0].axes == (8.0,)


# ---- End to end on ../shared/perfdb v0.18 (expected measured latencies read from the
# CSVs by tests.support.corpus_rows; the latency values are synthetic) ----------------


def mla_rows(cache: int, tokens: int) -> list[CsvDict]:
    return select(read_rows("ScatterNdUpdate"), lambda r: shapes(r)[:2] == [
        f"{cache},128", f"{tokens},1"])


def test_mla_base_exact_then_specialized_exact(perfdb_store):
    rows = mla_rows(226048, 4096)
    two_d = [r for r in rows if shapes(r)[2] == "4096,128"]
    assert (len(rows), len(two_d)) == (2, 1)
    base = perfdb_store.lookup(corpus_mla(4096), "v0.18")
    assert base.details["method"] == "base_exact"
    assert base.latency_us == pytest.approx(expected_measured(two_d, PROFILING_FIRST))
    path = perfdb_store.lookup(corpus_mla(4096, index=[4096]), "v0.18")
    assert (path.source, path.details["method"]) == (QuerySource.MEASURED, "exact_coordinate")
    assert path.latency_us == pytest.approx(expected_measured(rows, PROFILING_FIRST))


def test_mla_real_duplicate_rows_merge_by_median(perfdb_store):
    rows = mla_rows(131072, 16)
    assert len(rows) == 2
    result = perfdb_store.lookup(corpus_mla(16, cache=131072, index=[16]), "v0.18")
    assert result.latency_us == pytest.approx(expected_measured(rows, PROFILING_FIRST))
    assert result.details["duplicates"]["count"] == 2


def test_mla_in_range_and_misses(perfdb_store):
    inside = perfdb_store.lookup(corpus_mla(700), "v0.18")
    assert (inside.source, inside.details["method"]) == (QuerySource.INTERPOLATED, "linear_1d")
    assert perfdb_store.lookup(corpus_mla(10000), "v0.18").reason is Reason.OUTSIDE_RANGE
    assert perfdb_store.lookup(corpus_mla(700, cache=100000), "v0.18").reason \
        is Reason.REGIME_MISMATCH
