"""MOE/DFC (moe_fused, DispatchFFNCombine) on a hand-computable fixture (RFC §4.1.1, §7.2).

The W8A8 regime (EP 16, 16 local experts, hidden 7168, GMM1 (16, 7168, 4096), GMM2
(16, 2048, 7168), topk 8) is measured at tokens 8 → 100, 16 → 120, 64 → 200 and 220
(a duplicate: median 210), 128 → 300, 1024 → 1000; so tokens 32 → 150 and 576 → 650.
Every foreign row below sits at or around tokens 32 with a latency that would show if
it leaked into that answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason
from profstore.paths.base import Refusal
from profstore.paths.moe_fused import MoeFusedPath, row_subtype

from tests.support.corpus_rows import (
    DEFAULT_ORDER,
    CsvDict,
    expected_measured,
    read_rows,
    select,
    shapes,
)
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.specialized_leaves import dfc as corpus_dfc
from tests.support.stores import opened_store

KERNEL = "DispatchFFNCombine"
V15_DIR = "vllm0.15.0_torch2.9.0_cann8.5"
SUFFIXES = ("", "_quant", "_quant_int4", "_fp8", "_mxfp4")
UNKNOWN_OP = "tensor_cast.dispatch_ffn_combine_w4a16.default"
EMBEDDED = {"embedded_compute": [{"kernel_type": "AddRmsNormBias"}, {"kernel_type": "Cast"}],
            "embedded_communication": {"kernel_type": "hcom_alltoall_"}}
BAD_EP = ("", "N/A", "-2", "0", "16;32")


def op_name(suffix: str) -> str:
    return f"tensor_cast.dispatch_ffn_combine{suffix}.default"


def dfc_row(tokens: int, latency: float | str, ep: Any = 16, *, experts: int = 16,
            inter: int = 4096, gmm2_inter: int | None = None, topk: int = 8,
            weight: str = "INT8", ep_column: bool = True) -> Row:
    hidden = 7168
    gmm1, gmm2 = [experts, hidden, inter], [experts, gmm2_inter or inter // 2, hidden]
    inputs = [[tokens, hidden], gmm1, gmm2, [tokens, topk], [experts * inter],
              [experts * hidden], [tokens, topk]]
    dtypes = ["DT_BF16", weight, weight, "INT32", "INT64", "INT64", "FLOAT"]
    formats = ["ND", "FRACTAL_NZ", "FRACTAL_NZ", "ND", "ND", "ND", "ND"]
    return Row(inputs, dtypes, [[tokens, hidden], [experts]], ["DT_BF16", "INT64"], latency,
               formats=formats, extra={"EP Size": ep} if ep_column else {}, core="MIX_AIC")


MAIN = [dfc_row(8, 100.0), dfc_row(16, 120.0), dfc_row(64, 200.0), dfc_row(64, 220.0),
        dfc_row(128, 300.0), dfc_row(1024, 1000.0)]
ROWS = [
    *MAIN,                                                  # lines 2-7
    dfc_row(16, 400.0, ep=32), dfc_row(64, 700.0, ep=32),   # EP 32: tokens 32 → 500
    dfc_row(32, 999.0, topk=6),                             # topk 6
    dfc_row(32, 888.0, experts=8),                          # 8 local experts
    dfc_row(16, 30.0, inter=2048), dfc_row(64, 90.0, inter=2048),  # other GMM1+GMM2
    dfc_row(32, 777.0, gmm2_inter=1024),                    # other GMM2 only
    dfc_row(16, 40.0, weight="DT_BF16"), dfc_row(64, 100.0, weight="DT_BF16"),  # plain
    *[dfc_row(32, 5000.0, ep=bad) for bad in BAD_EP],       # refused by the path
    dfc_row(48, "0"),                                       # rejected at ingest
    dfc_row(16, "-1", weight="INT4"),                       # rejected at ingest
]


def mapping() -> dict:
    entries = {op_name(s): {"kernel_type": KERNEL, "query_mode": "moe_fused"} for s in SUFFIXES}
    entries[op_name("_quant")].update(EMBEDDED)
    entries[UNKNOWN_OP] = {"kernel_type": KERNEL, "query_mode": "moe_fused"}
    return mapping_doc(entries)


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("dfc")
    write_version(root / "data", {KERNEL: ROWS}, mapping())
    no_ep = [dfc_row(16, 120.0, ep_column=False), dfc_row(64, 200.0, ep_column=False)]
    write_version(root / "data", {KERNEL: no_ep}, mapping(), directory=V15_DIR)
    return build_database(root)


store = opened_store("store_db", scope="module")


def weights(experts: int, shape: list[int], dtype: str, per_expert: bool) -> list[dict]:
    if per_expert:
        return [{"shape": shape, "dtype": dtype, "format": "FRACTAL_NZ"}] * experts
    return [{"shape": [experts, *shape], "dtype": dtype, "format": "FRACTAL_NZ"}]


def dfc(tokens: int = 32, suffix: str = "_quant", *, ep: int | None = 16, experts: int = 16,
        inter: int = 4096, gmm2_inter: int | None = None, topk: int = 8,
        weight: str = "int8", x_shape: list[int] | None = None, per_expert: bool = False,
        op: str | None = None) -> LeafOp:
    """A DFC leaf with the argument positions of DESIGN §8 for each variant."""
    hidden = 7168
    x = {"shape": x_shape or [tokens, hidden], "dtype": "bfloat16"}
    idx = {"shape": [tokens, topk], "dtype": "int32"}
    gmm1 = weights(experts, [hidden, inter], weight, per_expert)
    gmm2 = weights(experts, [gmm2_inter or inter // 2, hidden], weight, per_expert)
    scale = [{"shape": [experts, inter], "dtype": "float32"}]
    ranks = list(range(ep or 1))
    if suffix == "":
        args = [x, idx, gmm1, [None], gmm2, [None], 0, ranks]
    elif suffix == "_mxfp4":
        args = [x, idx, gmm1, scale, scale, [None], "bfloat16", 32, gmm2, scale, scale, [None],
                "bfloat16", 0, ranks]
    else:
        args = [x, idx, gmm1, scale, [None], [None], "bfloat16", gmm2, scale, [None], [None],
                "bfloat16", 0, ranks]
    return LeafOp.from_json({
        "op": op or op_name(suffix), "args": args,
        "outputs": [{"shape": [tokens, hidden], "dtype": "bfloat16"}],
        "context": {"ep_size": ep} if ep else {},
    })


def test_w8a8_tokens_interpolate_in_1d_with_success_details(store):
    result = store.lookup(dfc(32), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(150.0)
    assert result.confidence == 0.9
    d = result.details
    assert (d["method"], d["interpolation_dim"], d["axes"]) == ("linear_1d", 1, {"tokens": 32.0})
    assert (d["kernel_type"], d["query_mode"], d["path"]) == (KERNEL, "moe_fused", "moe_fused")
    assert d["boundary"] == {"lower": 16.0, "upper": 64.0, "min": 8.0, "max": 1024.0}
    assert d["candidate_count"] == 5
    assert [(r["line"], r["merged_rows"]) for r in d["matched_rows"]] == [(3, 1), (4, 2)]
    assert [r["weight"] for r in d["matched_rows"]] == pytest.approx([2 / 3, 1 / 3])
    assert (d["ep_size"], d["topk"], d["local_experts"], d["quant_subtype"]) == (16, 8, 16, "w8a8")
    assert d["embedded_kernels_not_added"] == ["AddRmsNormBias", "Cast", "hcom_alltoall_"]
    assert d["exact_owner"] == "path"
    assert d["interpolation_path"][0]["outcome"] == "interpolated"


def test_tokens_are_the_product_of_leading_dims(store):
    result = store.lookup(dfc(576, x_shape=[2, 4, 72, 7168]), "v0.18")
    assert result.details["axes"] == {"tokens": 576.0}
    assert result.latency_us == pytest.approx(650.0)


def test_duplicate_coordinate_is_measured_as_the_median(store):
    result = store.lookup(dfc(64), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == 210.0
    assert result.details["method"] == "exact_coordinate"
    assert result.details["duplicates"] == {"count": 2, "min": 200.0, "max": 220.0,
                                            "aggregation": "median"}


def test_per_expert_and_stacked_weight_lists_give_one_regime(store):
    stacked = store.lookup(dfc(32), "v0.18")
    listed = store.lookup(dfc(32, per_expert=True), "v0.18")
    assert listed.latency_us == stacked.latency_us == pytest.approx(150.0)
    assert listed.details["target_regime"] == stacked.details["target_regime"]
    assert listed.details["target_regime"]["gmm1_shape"] == "16,7168,4096"


@pytest.mark.parametrize(("leaf", "expected", "source"), [
    (dfc(32, ep=32), 500.0, QuerySource.INTERPOLATED),
    (dfc(32, topk=6), 999.0, QuerySource.MEASURED),
    (dfc(32, experts=8), 888.0, QuerySource.MEASURED),
    (dfc(32, inter=2048), 50.0, QuerySource.INTERPOLATED),
    (dfc(32, gmm2_inter=1024), 777.0, QuerySource.MEASURED),
], ids=["ep", "topk", "local_experts", "gmm1_and_gmm2", "gmm2_only"])
def test_each_regime_field_isolates_its_rows(store, leaf, expected, source):
    result = store.lookup(leaf, "v0.18")
    assert result.latency_us == pytest.approx(expected)
    assert result.source is source


def test_missing_blank_and_invalid_ep_rows_are_refused_visibly(store):
    result = store.lookup(dfc(32, ep=8), "v0.18")
    assert result.reason is Reason.REGIME_MISMATCH
    attempt = result.details["attempted_kernels"][0]
    assert attempt["path_refusals"] == {
        "required_field_missing: EP Size blank": 1,
        "required_field_missing: EP Size 'N/A' is not a positive integer": 1,
        "required_field_missing: EP Size '-2' is not a positive integer": 1,
        "required_field_missing: EP Size '0' is not a positive integer": 1,
        "required_field_missing: EP Size '16;32' is not a positive integer": 1,
    }
    assert (attempt["kernel_points"], attempt["kernel_regimes"]) == (15, 7)


def test_refused_ep_rows_never_answer_the_valid_ep_coordinate(store):
    result = store.lookup(dfc(32), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(150.0)


def test_missing_ep_column_refuses_every_row(store):
    result = store.lookup(dfc(16), "v0.15")
    assert result.reason is Reason.REGIME_MISMATCH
    attempt = result.details["attempted_kernels"][0]
    assert attempt["message"] == f"every {KERNEL} row was refused by the moe_fused path"
    assert attempt["path_refusals"] == {"required_field_missing: EP Size column missing": 2}


def test_unconfigured_runtime_ep_is_its_own_reason(store):
    result = store.lookup(dfc(32, ep=None), "v0.18")
    assert result.latency_us is None
    assert result.reason is Reason.EP_SIZE_NOT_CONFIGURED


def test_plain_subtype_uses_only_bf16_weight_rows(store):
    result = store.lookup(dfc(32, "", weight="bfloat16"), "v0.18")
    assert result.latency_us == pytest.approx(60.0)
    assert result.details["quant_subtype"] == "plain"


@pytest.mark.parametrize(("suffix", "weight", "subtype"), [
    ("", "int8", "plain"),
    ("_quant_int4", "int4", "int4"),
    ("_quant_int4", "int8", "int4"),
    ("_fp8", "float8_e4m3fn", "fp8"),
    ("_mxfp4", "float4_e2m1fn_x2", "mxfp4"),
])
def test_subtypes_without_data_miss_stably(store, suffix, weight, subtype):
    result = store.lookup(dfc(64, suffix, weight=weight), "v0.18")
    assert result.latency_us is None
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_regime"]["quant_subtype"] == subtype
    assert result.details["base_attempts"] == []


@pytest.mark.parametrize(("dtypes", "subtype"), [
    (("DT_BF16", "INT8", "INT8"), "w8a8"),
    (("DT_BF16", "DT_BF16", "DT_BF16"), "plain"),
    (("DT_BF16", "INT4", "INT4"), "int4"),
    (("DT_BF16", "FLOAT8_E4M3FN", "FLOAT8_E4M3FN"), "fp8"),
    (("DT_BF16", "FLOAT4_E2M1", "FLOAT4_E2M1"), "mxfp4"),
])
def test_row_subtype_from_csv_dtypes(dtypes, subtype):
    assert row_subtype(*dtypes) == subtype


@pytest.mark.parametrize("dtypes", [("DT_BF16", "INT8", "INT4"), ("INT8", "INT8", "INT8")])
def test_row_subtype_refuses_unknown_signatures(dtypes):
    assert isinstance(row_subtype(*dtypes), Refusal)


def test_outside_range_miss_details(store):
    result = store.lookup(dfc(2048), "v0.18")
    assert result.reason is Reason.OUTSIDE_RANGE
    d = result.details
    assert d["target_axes"] == [2048.0]
    assert d["target_regime"]["ep_size"] == 16
    assert [a["kernel"] for a in d["attempted_kernels"]] == [KERNEL]
    assert d["last_geometry"]["message"] == \
        "target tokens 2048 above the largest measured tokens 1024"
    assert store.lookup(dfc(4), "v0.18").reason is Reason.OUTSIDE_RANGE


def test_single_point_regime_is_insufficient(store):
    result = store.lookup(dfc(48, experts=8), "v0.18")
    assert result.reason is Reason.INSUFFICIENT_CANDIDATES
    assert result.details["last_geometry"]["candidates"] == 1


def test_invalid_latency_rows_are_rejected_at_ingest(store):
    result = store.lookup(dfc(48), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(180.0)
    int4 = store.lookup(dfc(16, "_quant_int4", weight="int4"), "v0.18")
    assert int4.reason is Reason.REGIME_MISMATCH


@pytest.mark.parametrize(("leaf", "reason"), [
    (dfc(32, op=UNKNOWN_OP), Reason.TARGET_UNAVAILABLE),
    (LeafOp.from_json({"op": op_name("_quant"), "args": [{"shape": [32, 7168],
                                                         "dtype": "bfloat16"}, 8],
                       "context": {"ep_size": 16}}), Reason.REQUIRED_FIELD_MISSING),
], ids=["unknown_variant", "no_expert_indices"])
def test_target_construction_failures(store, leaf, reason):
    result = store.lookup(leaf, "v0.18")
    assert result.latency_us is None
    assert result.reason is reason


def test_missing_weight_list_names_the_argument(store):
    leaf = dfc(32)
    broken = LeafOp(leaf.op, leaf.args[:7] + ((None,),) + leaf.args[8:], leaf.kwargs,
                    leaf.outputs, leaf.context)
    result = store.lookup(broken, "v0.18")
    assert result.reason is Reason.REQUIRED_FIELD_MISSING
    assert result.details["attempted_kernels"][0]["message"] == \
        "arg 7 (gmm2_w): weight list holds a non-tensor"


def test_path_owns_exact_so_the_activation_only_base_key_is_never_used():
    assert MoeFusedPath().exact_owner_for(dfc(32)) is True


# ---- End to end on ../shared/perfdb v0.18 (expected measured latencies read from the
# CSVs by tests.support.corpus_rows; the latency values are synthetic) ----------------


def dfc_rows(tokens: int, ep: str) -> list[CsvDict]:
    return select(read_rows("DispatchFFNCombine"), lambda r: shapes(r)[:3] == [
        f"{tokens},7168", "16,7168,4096", "16,2048,7168"] and r["EP Size"] == ep)


def test_dfc_measured_coordinate_excludes_blank_ep_duplicates(perfdb_store):
    valid = dfc_rows(64, "16")
    blank = dfc_rows(64, "")
    assert (len(valid), len(blank)) == (2, 1)
    result = perfdb_store.lookup(corpus_dfc(64), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == pytest.approx(expected_measured(valid, DEFAULT_ORDER))
    assert result.details["duplicates"]["count"] == 2
    assert result.latency_us != pytest.approx(expected_measured(valid + blank, DEFAULT_ORDER))


def test_dfc_in_range_coordinate_interpolates(perfdb_store):
    result = perfdb_store.lookup(corpus_dfc(100), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert [r["axes"] for r in result.details["matched_rows"]] == [[96.0], [128.0]]


def test_dfc_out_of_range_and_foreign_subtypes_miss(perfdb_store):
    assert perfdb_store.lookup(corpus_dfc(20000), "v0.18").reason is Reason.OUTSIDE_RANGE
    for leaf in (corpus_dfc(64, "", "bfloat16"), corpus_dfc(64, "_quant_int4", "int4"),
                 corpus_dfc(64, ep=8)):
        assert perfdb_store.lookup(leaf, "v0.18").reason is Reason.REGIME_MISMATCH


def test_dfc_v015_has_no_ep_column(perfdb_store):
    result = perfdb_store.lookup(corpus_dfc(16), "v0.15")
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["attempted_kernels"][0]["path_refusals"] == {
        "required_field_missing: EP Size column missing": 3}
