"""quantized_matmul (QuantBatchMatmulV3) on a hand-computable INT8 grid.

FRACTAL_NZ rows follow f(M, K, N) = 2 + M/16 + K/1024 + N/512; their weight is stored as
the device does, raw (N/32, K/16, 16, 32), which restores to (N, K).
"""

from __future__ import annotations

import itertools

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.mapping import load_mapping
from profstore.model.result import QuerySource, Reason

from tests.support.corpus_coordinates import coordinates, gap, qbmm_key, single
from tests.support.markers import requires_perfdb
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.specialized_leaves import SQL as CORPUS_SQL
from tests.support.specialized_leaves import linear as corpus_linear
from tests.support.stores import opened_store

SQL = "tensor_cast.static_quant_linear.default"
ND_OP = "test.quant_linear_nd"
NZ_FORMATS = ["ND", "FRACTAL_NZ", "ND", "ND"]


def f(m: float, k: float, n: float) -> float:
    return 2 + m / 16 + k / 1024 + n / 512


def qbmm_row(m: int, k: int, n: int, latency: float | str, *, nz: bool = True,
             int64_scales: bool = False) -> Row:
    weight = [n // 32, k // 16, 16, 32] if nz else [k, n]
    scales = ["INT64", "INT32"] if int64_scales else ["DT_BF16", "FLOAT"]
    return Row([[m, k], weight, [n], [m]], ["INT8", "INT8", *scales], [[m, n]], ["DT_BF16"],
               latency, formats=NZ_FORMATS if nz else ["ND"] * 4, core="MIX_AIC")


def rows() -> list[Row]:
    grid = [qbmm_row(m, k, n, f(m, k, n))
            for m, k, n in itertools.product((16, 32, 64), (1024, 2048), (512, 1024))]
    return grid + [
        qbmm_row(16, 1024, 512, f(16, 1024, 512), int64_scales=True),
        qbmm_row(48, 1024, 512, "0"),  # invalid latency: rejected at ingest
        qbmm_row(24, 1024, 512, 77.0, nz=False),
    ]


def entry(**extra) -> dict:
    return {"kernel_type": "QuantBatchMatmulV3", "tc_input_count": 2,
            "compute_subcategory": "quantized_matmul", **extra}


NZ = {"expected_input_formats": ["ND", "FRACTAL_NZ"]}
ENTRIES = {
    SQL: entry(**NZ, query_mode="mtp_projection"),
    "tensor_cast.static_quant_linear_int4.default": entry(**NZ),
    "tensor_cast.fp8_linear.default": entry(**NZ),
    "tensor_cast.mxfp4_linear.default": entry(**NZ),
    ND_OP: entry(),
}


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quant_matmul")
    write_version(tmp / "data", {"QuantBatchMatmulV3": rows()}, mapping_doc(ENTRIES))
    return build_database(tmp)


store = opened_store("db_path", scope="module")


def linear(m: int, k: int, n: int, *, op: str = SQL, dtype: str = "int8",
           weight: dict | None = None, extra: list | None = None,
           fmt: str | None = None) -> LeafOp:
    """``fmt`` states the activation and weight format (None: unstated, the output's too)."""
    stated = {"format": fmt}
    x = {"shape": [m, k], "dtype": dtype, **stated}
    scales = [{"shape": [n], "dtype": "bfloat16"}, {"shape": [m], "dtype": "float32"}]
    return LeafOp.from_json({
        "op": op,
        "args": [x, weight or {"shape": [k, n], "dtype": dtype, **stated},
                 *(scales if extra is None else extra)],
        "outputs": [{"shape": [m, n], "dtype": "float16", **({} if fmt else stated)}],
    })


def first_attempt(result) -> dict:
    return result.details["attempted_kernels"][0]


def test_quant_batch_matmul_3d(store):
    result = store.lookup(linear(24, 1536, 768), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(6.5)
    assert (result.details["method"], result.details["interpolation_dim"]) == ("simplex_3d", 3)
    assert result.confidence == 0.7


@pytest.mark.parametrize(("target", "method"), [
    ((24, 1024, 512), "linear_1d"), ((16, 1536, 768), "simplex_2d")])
def test_lower_dimensions(store, target, method):
    result = store.lookup(linear(*target), "v0.18")
    assert result.latency_us == pytest.approx(f(*target))
    assert result.details["method"] == method


def test_success_details(store):
    details = store.lookup(linear(24, 1536, 768), "v0.18").details
    assert (details["compute_subcategory"], details["query_mode"]) == (
        "quantized_matmul", "mtp_projection")
    assert (details["path"], details["exact_owner"], details["quant_subtype"]) == (
        "quantized_matmul", "path", "int8")
    assert details["axes"] == {"M": 24.0, "K": 1536.0, "N": 768.0}
    assert details["target_regime"]["formats"] == "ND;FRACTAL_NZ"
    assert details["target_regime"]["output_signature"] == "DT_BF16:ND"
    assert details["candidate_count"] == 12
    assert len(details["matched_rows"]) == 4


def test_tc_input_count_ignores_the_scale_slots(store):
    # the grid point has a DT_BF16;FLOAT-scale row and an INT64;INT32-scale row
    result = store.lookup(linear(16, 1024, 512, extra=[{"shape": [7], "dtype": "int64"}]),
                          "v0.18")
    assert (result.latency_us, result.source) == (f(16, 1024, 512), QuerySource.MEASURED)
    assert result.details["method"] == "exact_coordinate"
    assert result.details["duplicates"]["count"] == 2


def test_stated_fractal_nz_weight_is_restored(store):
    raw = {"shape": [32, 128, 16, 32], "dtype": "int8", "format": "FRACTAL_NZ"}
    result = store.lookup(linear(32, 2048, 1024, weight=raw), "v0.18")
    assert result.latency_us == f(32, 2048, 1024)


def test_weight_format_comes_from_the_mapping_when_the_leaf_does_not_state_it(store):
    # unstated: the SQL entry's expected formats give ND;FRACTAL_NZ -> the NZ grid (5.5)
    mapped = store.lookup(linear(24, 1024, 512), "v0.18")
    assert mapped.latency_us == pytest.approx(5.5)
    # (the scale slots omit their format: ND by default, DESIGN §3)
    assert mapped.details["format_sources"] == {"args[0]": "mapping", "args[1]": "mapping",
                                                "args[2]": "default", "args[3]": "default",
                                                "outputs[0]": "inferred"}
    assert mapped.details["format_source"] == "inferred"  # the weakest source used
    # ND_OP has no expected formats: the ND row measures (24, 1024, 512) exactly (77), the
    # NZ grid only interpolates it (5.5): the measured format answers, the other is listed
    inferred = store.lookup(linear(24, 1024, 512, op=ND_OP), "v0.18")
    assert (inferred.latency_us, inferred.details["format_source"]) == (77.0, "inferred")
    assert sorted((c["interpolation_dim"], c["latency_us"])
                  for c in inferred.details["format_candidates"]) == [
        (0, 77.0), (1, pytest.approx(5.5))]
    stated = {"shape": [1024, 512], "dtype": "int8", "format": "ND"}
    x = {"shape": [24, 1024], "dtype": "int8", "format": "ND"}
    leaf = LeafOp.from_json({"op": ND_OP, "args": [x, stated, {"shape": [512], "dtype":
                             "bfloat16"}, {"shape": [24], "dtype": "float32"}],
                             "outputs": [{"shape": [24, 512], "dtype": "float16"}]})
    nd = store.lookup(leaf, "v0.18")
    assert (nd.latency_us, nd.source) == (77.0, QuerySource.MEASURED)
    assert nd.details["target_regime"]["formats"] == "ND;ND"


@pytest.mark.parametrize(("op", "dtype", "subtype"), [
    ("tensor_cast.fp8_linear.default", "float8_e4m3fn", "fp8"),
    ("tensor_cast.mxfp4_linear.default", "float4_e2m1fn_x2", "mxfp4"),
    ("tensor_cast.static_quant_linear_int4.default", "int4", "int4"),
    ("tensor_cast.fp8_linear.default", "int8", "fp8"),
])
def test_int8_rows_never_serve_other_subtypes(store, op, dtype, subtype):
    miss = store.lookup(linear(16, 1024, 512, op=op, dtype=dtype), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.REGIME_MISMATCH)
    assert miss.details["target_regime"]["quant_subtype"] == subtype
    assert (first_attempt(miss)["kernel_points"], first_attempt(miss)["kernel_regimes"]) == (
        14, 2)


def test_max_interpolation_dim_narrows_the_ceiling(db_path):
    overlay = ("operator_mappings: {}\ninterpolation_policy:\n  kernel_overrides:\n"
               "    QuantBatchMatmulV3:\n      max_interpolation_dim: 1\n")
    with Store.open(db_path, mapping_overlay=load_mapping(overlay, is_text=True)) as s:
        assert s.lookup(linear(24, 1024, 512), "v0.18").latency_us == pytest.approx(5.5)
        miss = s.lookup(linear(24, 1536, 768), "v0.18")
    assert miss.reason is Reason.DIMENSION_BLOCKED
    outcomes = [step["outcome"] for step in first_attempt(miss)["interpolation_path"]]
    assert outcomes == ["insufficient_candidates"] * 3 + ["dimension_blocked"] * 4


@pytest.mark.parametrize(("leaf", "reason", "text"), [
    (LeafOp.from_json({"op": SQL, "args": [{"shape": [24, 1024], "dtype": "int8"}],
                       "outputs": [{"shape": [24, 512], "dtype": "float16"}]}),
     Reason.TARGET_UNAVAILABLE, "a matmul needs two"),
    (linear(24, 1024, 512, weight={"shape": [2048, 512], "dtype": "int8"}),
     Reason.TARGET_UNAVAILABLE, "does not hold K=1024"),
    (LeafOp.from_json({"op": SQL, "args": [{"shape": [24, 1024], "dtype": "int8"},
                                           {"shape": [1024, 512], "dtype": "int8"}]}),
     Reason.REQUIRED_FIELD_MISSING, "no output"),
])
def test_target_construction_failures(store, leaf, reason, text):
    miss = store.lookup(leaf, "v0.18")
    assert (miss.latency_us, miss.reason) == (None, reason)
    assert text in first_attempt(miss)["message"]


def test_insufficient_candidates(store):
    miss = store.lookup(linear(28, 1024, 512, op=ND_OP, fmt="ND"), "v0.18")
    assert miss.reason is Reason.INSUFFICIENT_CANDIDATES
    assert "only one measured M (24)" in first_attempt(miss)["interpolation_path"][0]["message"]


def test_invalid_latency_row_is_never_a_candidate(store):
    result = store.lookup(linear(48, 1024, 512), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(f(48, 1024, 512))


def test_out_of_range_and_miss_details(store):
    miss = store.lookup(linear(128, 1024, 512), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_CONVEX_HULL)
    path = first_attempt(miss)["interpolation_path"]
    assert (path[0]["axes"], path[0]["outcome"]) == (["M"], "outside_range")
    assert miss.details["target_axes"] == [128.0, 1024.0, 512.0]
    assert miss.details["target_regime"]["quant_subtype"] == "int8"
    assert miss.details["last_geometry"]["axes"] == ["M", "K", "N"]


# ---- End to end on ../shared/perfdb v0.18 (expected latencies from
# tests.support.corpus_coordinates' reading of the CSVs, never from the store) ---------


@pytest.fixture(scope="module")
def qbmm():
    return coordinates("QuantBatchMatmulV3", qbmm_key)


@requires_perfdb
def test_quantized_matmul_measured_coordinate(perfdb_store, qbmm):
    result = perfdb_store.lookup(corpus_linear(CORPUS_SQL, 20, 7168, 4096, "int8", "float16"),
                                 "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == single(qbmm, (20, 7168, 4096))
    assert (result.details["method"], result.details["exact_owner"]) == (
        "exact_coordinate", "path")


@requires_perfdb
def test_quantized_matmul_interpolates_m(perfdb_store, qbmm):
    m, expected = gap(qbmm, (7168, 4096))
    result = perfdb_store.lookup(corpus_linear(CORPUS_SQL, m, 7168, 4096, "int8", "float16"),
                                 "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)
    assert result.details["method"] == "linear_1d"


@requires_perfdb
def test_quantized_matmul_out_of_range_is_outside_range_despite_the_1d_cap(perfdb_store, qbmm):
    """v0.18 caps QuantBatchMatmulV3 at 1-D; a target beyond the measured M is still
    reported as outside_range (a bound says more than the blocked 2-D groups)."""
    top = max(c[0] for c in qbmm if c[1:] == (7168, 4096))
    miss = perfdb_store.lookup(corpus_linear(CORPUS_SQL, top * 4, 7168, 4096, "int8", "float16"),
                               "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_RANGE)
    first = miss.details["attempted_kernels"][0]["interpolation_path"][0]
    assert (first["axes"], first["outcome"]) == (["M"], "outside_range")


@requires_perfdb
def test_fp8_linear_never_uses_int8_rows(perfdb_store):
    leaf = corpus_linear("tensor_cast.fp8_linear.default", 20, 7168, 4096, "float8_e4m3fn",
                  "bfloat16")
    miss = perfdb_store.lookup(leaf, "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.REGIME_MISMATCH)
    assert miss.details["attempted_kernels"][0]["kernel_points"] == 2979
