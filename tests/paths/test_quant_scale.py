"""compute_scale (DynamicQuant / DynamicBlockQuant) on hand-computable fixtures.

Symmetric BF16 per-token rows follow f(M, K) = 1 + M/8 + K/1024; other regimes carry
latencies far from f so a cross-regime reuse would show in the number.
"""

from __future__ import annotations

import csv
import itertools

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.mapping import load_mapping
from profstore.model.result import QuerySource, Reason

from tests.support.corpus_coordinates import V18, coordinates, dq_key, gap, single, valid
from tests.support.markers import requires_perfdb
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.specialized_leaves import quantize as corpus_quantize
from tests.support.stores import opened_store

SYM = "tensor_cast.dynamic_quantize_symmetric.default"
ASYM = "tensor_cast.dynamic_quantize_asymmetric.default"
MXFP4 = "tensor_cast.dynamic_quantize_mxfp4.default"


def f(m: float, k: float) -> float:
    return 1 + m / 8 + k / 1024


def dq_row(m: int, k: int, latency: float | str, dtype: str = "DT_BF16", offset: bool = False,
           scale: list[int] | None = None) -> Row:
    scale = [m] if scale is None else scale
    outputs = [[m, k], scale] + ([[m]] if offset else [])
    return Row([[m, k]], [dtype], outputs, ["INT8", "FLOAT"] + (["FLOAT"] if offset else []),
               latency)


def block_row(m: int, latency: float) -> Row:
    return Row([[m, 1024]], ["DT_BF16"], [[m, 1024], [m, 32]], ["FLOAT4_E2M1", "FLOAT"], latency)


def rows() -> list[Row]:
    found = [dq_row(m, k, f(m, k)) for m, k in itertools.product((8, 16, 32), (1024, 2048))]
    found.append(dq_row(24, 1024, "0"))  # invalid latency: rejected at ingest
    found += [dq_row(m, 1024, 100.0 + m, offset=True) for m in (8, 16, 32, 64)]
    found += [dq_row(m, 1024, 40.0 + m, dtype="DT_FLOAT16") for m in (8, 16)]
    found.append(dq_row(16, 1024, 70.0, scale=[]))  # per_tensor: scalar scale
    return found


ENTRIES = {
    SYM: {"kernel_type": "DynamicQuant", "compute_subcategory": "compute_scale",
          "alternate_kernel_types": ["AscendQuantV2"], "tc_input_count": 1},
    ASYM: {"kernel_type": "DynamicQuant", "compute_subcategory": "compute_scale"},
    MXFP4: {"kernel_type": "DynamicBlockQuant", "compute_subcategory": "compute_scale"},
}


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quant_scale")
    ascend = [Row([[m, 1024], [1024], [1024]], ["DT_BF16"] * 3, [[m, 1024]], ["INT8"], 9.0)
              for m in (8, 64)]
    kernels = {"DynamicQuant": rows(), "AscendQuantV2": ascend,
               "DynamicBlockQuant": [block_row(8, 18.0), block_row(16, 26.0)]}
    write_version(tmp / "data", kernels, mapping_doc(ENTRIES))
    return build_database(tmp)


store = opened_store("db_path", scope="module")


def quant(m: int, k: int, *, op: str = SYM, dtype: str = "bfloat16",
          scale: list[int] | None = None, outputs: int | None = None) -> LeafOp:
    offset = op == ASYM
    scale = [m] if scale is None else scale
    outs = [{"shape": [m, k], "dtype": "int8"}, {"shape": scale, "dtype": "float32"}]
    outs += [{"shape": [m], "dtype": "float32"}] if offset else []
    return LeafOp.from_json({
        "op": op, "args": [{"shape": [m, k], "dtype": dtype}, [-1], "float32", "int8"],
        "outputs": outs[:outputs] if outputs is not None else outs,
    })


def mxfp4(m: int, group_size: int | None, scale_cols: int) -> LeafOp:
    args = [{"shape": [m, 1024], "dtype": "bfloat16"}]
    args += [] if group_size is None else [group_size]
    return LeafOp.from_json({"op": MXFP4, "args": args, "outputs": [
        {"shape": [m, 512], "dtype": "float4_e2m1fn_x2"},
        {"shape": [m, scale_cols], "dtype": "float32"}]})


def first_attempt(result) -> dict:
    return result.details["attempted_kernels"][0]


def test_dynamic_quant_2d(store):
    result = store.lookup(quant(12, 1536), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(f(12, 1536))
    assert (result.details["method"], result.details["interpolation_dim"]) == ("simplex_2d", 2)
    assert result.confidence == 0.8


@pytest.mark.parametrize(("m", "k", "axes"), [(12, 1024, ["M"]), (8, 1536, ["K"])])
def test_one_dimensional_axes_come_first(store, m, k, axes):
    result = store.lookup(quant(m, k), "v0.18")
    assert result.latency_us == pytest.approx(f(m, k))
    assert result.details["interpolation_path"][-1]["axes"] == axes
    assert result.details["method"] == "linear_1d"


def test_success_details(store):
    details = store.lookup(quant(12, 1536), "v0.18").details
    assert details["compute_subcategory"] == "compute_scale"
    assert (details["path"], details["kernel_type"], details["exact_owner"]) == (
        "compute_scale", "DynamicQuant", "path")
    assert details["axes"] == {"M": 12.0, "K": 1536.0}
    assert (details["scale_mode"], details["block_size"]) == ("per_token", None)
    assert details["candidate_count"] == 6
    assert details["target_regime"]["output_signature"] == "INT8:ND;FLOAT:ND"
    assert len(details["matched_rows"]) == 3
    assert set(details["boundary"]) >= {"simplex", "axis_min", "axis_max"}
    assert [step["outcome"] for step in details["interpolation_path"]] == [
        "insufficient_candidates", "insufficient_candidates", "interpolated"]


def test_specialized_exact_skips_the_base_lookup(store):
    result = store.lookup(quant(16, 2048), "v0.18")
    assert (result.latency_us, result.source) == (f(16, 2048), QuerySource.MEASURED)
    assert result.details["method"] == "exact_coordinate"
    assert "base_attempts" not in result.details


def test_no_false_hit_from_a_row_of_another_output_signature(store):
    # base exact would match the asymmetric row at (64, 1024) by input shape alone
    miss = store.lookup(quant(64, 1024), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_CONVEX_HULL)
    assert miss.details["attempted_kernels"][0]["interpolation_path"][0]["outcome"] == \
        "outside_range"


def test_output_signature_isolates_asymmetric_rows(store):
    asym = store.lookup(quant(12, 1024, op=ASYM), "v0.18")
    assert asym.latency_us == pytest.approx(112.0)
    assert asym.details["scale_mode"] == "per_token;per_token"
    miss = store.lookup(quant(12, 1024, op=ASYM, dtype="float16"), "v0.18")
    assert miss.reason is Reason.REGIME_MISMATCH
    assert (first_attempt(miss)["kernel_points"], first_attempt(miss)["kernel_regimes"]) == (
        13, 4)


def test_scale_mode_is_a_regime_field(store):
    assert store.lookup(quant(16, 1024, scale=[]), "v0.18").latency_us == 70.0
    assert store.lookup(quant(16, 1024), "v0.18").latency_us == f(16, 1024)
    miss = store.lookup(quant(16, 1024, scale=[1024]), "v0.18")
    assert miss.reason is Reason.REGIME_MISMATCH
    assert miss.details["target_regime"]["scale_mode"] == "per_channel"


def test_float16_matches_the_fp16_rows_only(store):
    assert store.lookup(quant(16, 1024, dtype="float16"), "v0.18").latency_us == 56.0
    result = store.lookup(quant(12, 1024, dtype="float16"), "v0.18")
    assert result.latency_us == pytest.approx(52.0)
    assert result.details["target_regime"]["activation_dtype"] == "DT_FLOAT16"


def test_max_dimension(db_path):
    overlay = ("operator_mappings: {}\ninterpolation_policy:\n  kernel_overrides:\n"
               "    DynamicQuant:\n      max_interpolation_dim: 1\n")
    with Store.open(db_path, mapping_overlay=load_mapping(overlay, is_text=True)) as s:
        assert s.lookup(quant(12, 1024), "v0.18").latency_us == pytest.approx(f(12, 1024))
        miss = s.lookup(quant(12, 1536), "v0.18")
    assert miss.reason is Reason.DIMENSION_BLOCKED
    assert first_attempt(miss)["interpolation_path"][-1] == {
        "axes": ["M", "K"], "outcome": "dimension_blocked", "ceiling": 1}


def test_dynamic_block_quant_mode(store):
    result = store.lookup(mxfp4(12, 32, 32), "v0.18")
    assert result.latency_us == pytest.approx(22.0)
    assert (result.details["scale_mode"], result.details["block_size"]) == ("per_block", 32)
    assert store.lookup(mxfp4(16, 32, 32), "v0.18").source is QuerySource.MEASURED
    other_block = store.lookup(mxfp4(12, 64, 16), "v0.18")
    assert other_block.reason is Reason.REGIME_MISMATCH
    assert other_block.details["target_regime"]["block_size"] == 64


@pytest.mark.parametrize(("leaf", "reason", "text"), [
    (quant(12, 1024, outputs=1), Reason.REQUIRED_FIELD_MISSING, "scale output"),
    (LeafOp.from_json({"op": SYM, "args": [None], "outputs": []}),
     Reason.REQUIRED_FIELD_MISSING, "not a tensor"),
    (quant(12, 1024, scale=[3]), Reason.TARGET_UNAVAILABLE, "fit no scale mode"),
    (mxfp4(12, None, 32), Reason.REQUIRED_FIELD_MISSING, "group_size"),
    (mxfp4(12, 32, 16), Reason.TARGET_UNAVAILABLE, "block size 32"),
])
def test_target_construction_failures(store, leaf, reason, text):
    miss = store.lookup(leaf, "v0.18")
    assert (miss.latency_us, miss.reason) == (None, reason)
    assert text in first_attempt(miss)["message"]


def test_insufficient_candidates(store):
    miss = store.lookup(quant(12, 1024, scale=[]), "v0.18")
    assert miss.reason is Reason.INSUFFICIENT_CANDIDATES
    assert miss.details["last_geometry"]["axes"] == ["M", "K"]


def test_out_of_range(store):
    miss = store.lookup(quant(64, 1024, dtype="float16"), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_RANGE)
    assert "above the largest measured M 16" in first_attempt(miss)["message"]


def test_invalid_latency_row_is_never_a_candidate(store):
    result = store.lookup(quant(24, 1024), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(f(24, 1024))
    assert [r["axes"][0] for r in result.details["matched_rows"]] == [16.0, 32.0]


def test_miss_details_and_refused_alternate(store):
    miss = store.lookup(quant(64, 1024), "v0.18")
    assert miss.details["target_axes"] == [64.0, 1024.0]
    assert miss.details["target_regime"]["scale_mode"] == "per_token"
    primary, alternate = miss.details["attempted_kernels"]
    assert primary["kernel"] == "DynamicQuant"
    assert (alternate["kernel"], alternate["reason"]) == ("AscendQuantV2", "regime_mismatch")
    assert list(alternate["path_refusals"].values()) == [2]
    assert "scale output" in next(iter(alternate["path_refusals"]))
    assert miss.details["last_geometry"]["outcome"] == "outside_convex_hull"


# ---- End to end on ../shared/perfdb v0.18 (expected latencies from
# tests.support.corpus_coordinates' reading of the CSVs, never from the store) ---------


@pytest.fixture(scope="module")
def dynamic_quant():
    return coordinates("DynamicQuant", dq_key("DT_BF16"))


@requires_perfdb
def test_dynamic_quant_measured_coordinate(perfdb_store, dynamic_quant):
    result = perfdb_store.lookup(corpus_quantize(20, 7168), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == single(dynamic_quant, (20, 7168))
    assert result.details["scale_mode"] == "per_token"


@requires_perfdb
def test_dynamic_quant_interpolates_m(perfdb_store, dynamic_quant):
    m, expected = gap(dynamic_quant, (7168,))
    result = perfdb_store.lookup(corpus_quantize(m, 7168), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)


@requires_perfdb
def test_dynamic_quant_fp16_reads_its_own_rows(perfdb_store):
    fp16 = coordinates("DynamicQuant", dq_key("DT_FLOAT16"))
    result = perfdb_store.lookup(corpus_quantize(20, 5120, "float16"), "v0.18")
    assert result.latency_us == single(fp16, (20, 5120))


@requires_perfdb
def test_dynamic_quant_out_of_range(perfdb_store, dynamic_quant):
    top = max(c[0] for c in dynamic_quant if c[1:] == (7168,))
    miss = perfdb_store.lookup(corpus_quantize(top * 2, 7168), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_CONVEX_HULL)
    primary = miss.details["attempted_kernels"][0]
    assert primary["interpolation_path"][0]["outcome"] == "outside_range"


@requires_perfdb
def test_dynamic_quant_foreign_regime_and_refused_alternates(perfdb_store):
    miss = perfdb_store.lookup(corpus_quantize(20, 5120, "float16", scale=[]), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.REGIME_MISMATCH)
    kernels = [(a["kernel"], a["reason"]) for a in miss.details["attempted_kernels"]]
    assert kernels == [("DynamicQuant", "regime_mismatch"), ("AscendQuantV2", "regime_mismatch"),
                       ("AscendQuantV2Aicore", "regime_mismatch")]
    with open(V18 / "AscendQuantV2.csv", newline="") as handle:
        rows = sum(1 for row in csv.DictReader(handle)
                   if valid(row) or valid(row, "Profiling Average Duration(us)"))
    refused = miss.details["attempted_kernels"][1]["path_refusals"]
    assert sum(refused.values()) == rows


@requires_perfdb
def test_dynamic_block_quant_has_no_csv(perfdb_store):
    leaf = LeafOp.from_json({
        "op": "tensor_cast.dynamic_quantize_mxfp4.default",
        "args": [{"shape": [20, 7168], "dtype": "bfloat16"}, 32],
        "outputs": [{"shape": [20, 3584], "dtype": "float4_e2m1fn_x2"},
                    {"shape": [20, 224], "dtype": "float32"}]})
    miss = perfdb_store.lookup(leaf, "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.CSV_NOT_FOUND)
