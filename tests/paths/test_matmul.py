"""Phase 1 MatMul M/K/N on hand-computable grids.

Latency is the affine f(M, K, N) = 2 + M/16 + K/1024 + N/512 on every grid point, so
linear 1-D and simplex 2-D/3-D interpolation reproduce f exactly anywhere inside.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.mapping import load_mapping
from profstore.model.result import QuerySource, Reason

from tests.support.corpus_coordinates import Coordinate, coordinates, gap, mm_key
from tests.support.markers import requires_perfdb
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.specialized_leaves import linear as corpus_linear
from tests.support.stores import opened_store

BF16 = "DT_BF16"
MS, KS, NS = (16, 32, 64), (1024, 2048), (512, 1024)
NK_POINT = (64, 2048, 1024)  # stored with an (N, K) weight: base exact cannot see it


def f(m: float, k: float, n: float) -> float:
    return 2 + m / 16 + k / 1024 + n / 512


def mm_row(m: int, k: int, n: int, latency: float, weight: list[int] | None = None,
           formats: list[str] | None = None) -> Row:
    return Row([[m, k], weight or [k, n]], [BF16, BF16], [[m, n]], [BF16], latency,
               formats=formats, core="AI_CORE")


def bmm_row(batch: int, m: int, latency: float, transposed_out: bool = False) -> Row:
    out = [m, batch, 512] if transposed_out else [batch, m, 512]
    return Row([[batch, m, 128], [batch, 128, 512]], [BF16, BF16], [out], [BF16], latency,
               core="AI_CORE")


def grid_rows() -> list[Row]:
    rows = []
    for m, k, n in itertools.product(MS, KS, NS):
        weight = [n, k] if (m, k, n) == NK_POINT else None
        rows.append(mm_row(m, k, n, f(m, k, n), weight))
    # FRACTAL_NZ rows (raw (K/16, N/16, 16, 16) restores to (K, N)): their own regime
    rows += [mm_row(m, 1024, 512, lat, [64, 32, 16, 16], ["ND", "FRACTAL_NZ"])
             for m, lat in ((20, 50.0), (28, 60.0))]
    return rows


ENTRIES = {
    "aten.mm.default": {"kernel_type": "MatMulV2"},
    "aten.addmm.default": {"kernel_type": "MatMulV2"},
    "test.mm_collinear": {"kernel_type": "MatMulV3"},
    "test.mm_triangle": {"kernel_type": "MatMulCommon"},
    "aten.bmm.default": {"kernel_type": "BatchMatMulV2",
                         "alternate_kernel_types": ["TransposeBatchMatMul"]},
}


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("matmul")
    kernels = {
        "MatMulV2": grid_rows(),
        "MatMulV3": [mm_row(m, k, 512, f(m, k, 512))
                     for m, k in ((16, 1024), (32, 2048), (64, 4096))],
        "MatMulCommon": [mm_row(m, k, 512, f(m, k, 512))
                         for m, k in ((16, 1024), (64, 1024), (16, 4096))],
        "BatchMatMulV2": [bmm_row(16, 1, 4.0), bmm_row(16, 4, 7.0)],
        "TransposeBatchMatMul": [bmm_row(32, 1, 10.0, True), bmm_row(32, 4, 16.0, True)],
    }
    write_version(tmp / "data", kernels, mapping_doc(ENTRIES))
    return build_database(tmp)


store = opened_store("db_path", scope="module")


def capped(db_path, dim: int) -> Store:
    overlay = ("operator_mappings: {}\ninterpolation_policy:\n  kernel_overrides:\n"
               f"    MatMulV2:\n      max_interpolation_dim: {dim}\n")
    return Store.open(db_path, mapping_overlay=load_mapping(overlay, is_text=True))


def mm(m: int, k: int, n: int, op: str = "aten.mm.default", dtype: str = "bfloat16",
       weight: dict | None = None, fmt: str | None = "ND") -> LeafOp:
    """A matmul leaf; ``fmt`` states both operands' format (None: unstated, the output's
    too; a stated format leaves the output's omitted, ND by default)."""
    stated = {"format": fmt}
    return LeafOp.from_json({
        "op": op,
        "args": [{"shape": [m, k], "dtype": dtype, **stated},
                 weight or {"shape": [k, n], "dtype": dtype, **stated}],
        "outputs": [{"shape": [m, n], "dtype": dtype, **({} if fmt else stated)}],
    })


def bmm(batch: int, m: int) -> LeafOp:
    return LeafOp.from_json({
        "op": "aten.bmm.default",
        "args": [{"shape": [batch, m, 128], "dtype": "bfloat16"},
                 {"shape": [batch, 128, 512], "dtype": "bfloat16"}],
        "outputs": [{"shape": [batch, m, 512], "dtype": "bfloat16"}],
    })


def outcomes(result) -> list[tuple[list[str], str]]:
    path = result.details.get("interpolation_path")
    if path is None:
        path = result.details["attempted_kernels"][0]["interpolation_path"]
    return [(step["axes"], step["outcome"]) for step in path]


def test_base_exact_answers_a_measured_shape_first(store):
    result = store.lookup(mm(16, 1024, 512), "v0.18")
    assert (result.latency_us, result.source) == (5.0, QuerySource.MEASURED)
    assert result.details["method"] == "base_exact"


def test_weight_orientation_does_not_matter_for_the_exact_coordinate(store):
    result = store.lookup(mm(*NK_POINT), "v0.18")
    assert (result.latency_us, result.source) == (f(*NK_POINT), QuerySource.MEASURED)
    assert result.details["method"] == "exact_coordinate"
    assert result.details["base_attempts"][0]["reason"] == "no_exact_match"
    assert result.details["axes"] == {"M": 64.0, "K": 2048.0, "N": 1024.0}


@pytest.mark.parametrize(("target", "axes"), [
    ((24, 1024, 512), ["M"]),
    ((16, 1536, 512), ["K"]),
    ((16, 1024, 768), ["N"]),
])
def test_one_dimensional_axes(store, target, axes):
    result = store.lookup(mm(*target), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(f(*target))
    assert (result.details["method"], result.details["interpolation_dim"]) == ("linear_1d", 1)
    assert outcomes(result)[-1] == (axes, "interpolated")
    assert result.confidence == 0.9


@pytest.mark.parametrize(("target", "axes"), [
    ((24, 1536, 512), ["M", "K"]),
    ((24, 1024, 768), ["M", "N"]),
    ((16, 1536, 768), ["K", "N"]),
])
def test_two_dimensional_pairs(store, target, axes):
    result = store.lookup(mm(*target), "v0.18")
    assert result.latency_us == pytest.approx(f(*target))
    assert result.details["method"] == "simplex_2d"
    assert outcomes(result)[-1] == (axes, "interpolated")
    assert sum(r["weight"] for r in result.details["matched_rows"]) == pytest.approx(1.0)


def test_three_dimensional(store):
    result = store.lookup(mm(24, 1536, 768), "v0.18")
    assert result.latency_us == pytest.approx(6.5)
    assert (result.details["method"], result.details["interpolation_dim"]) == ("simplex_3d", 3)
    assert [axes for axes, _ in outcomes(result)] == [
        ["M"], ["K"], ["N"], ["M", "K"], ["M", "N"], ["K", "N"], ["M", "K", "N"]]


def test_a_target_answerable_in_one_dimension_never_uses_two(store):
    # (24, 1024, 512) also lies inside the MK, MN and MKN hulls
    result = store.lookup(mm(24, 1024, 512), "v0.18")
    assert outcomes(result) == [(["M"], "interpolated")]


def test_float16_reads_as_bf16_and_formats_are_regimes(store):
    assert store.lookup(mm(24, 1024, 512, dtype="float16"), "v0.18").latency_us == \
        pytest.approx(5.5)
    nz = {"shape": [64, 32, 16, 16], "dtype": "bfloat16", "format": "FRACTAL_NZ"}
    result = store.lookup(mm(24, 1024, 512, weight=nz), "v0.18")
    assert result.latency_us == pytest.approx(55.0)
    assert result.details["target_regime"]["formats"] == "ND;FRACTAL_NZ"


def test_max_interpolation_dim_zero_disables_interpolation_not_exact(db_path):
    with capped(db_path, 0) as s:
        miss = s.lookup(mm(24, 1024, 512), "v0.18")
        assert (miss.latency_us, miss.reason) == (None, Reason.DIMENSION_BLOCKED)
        assert {outcome for _, outcome in outcomes(miss)} == {"dimension_blocked"}
        assert s.lookup(mm(*NK_POINT), "v0.18").latency_us == f(*NK_POINT)


def test_max_interpolation_dim_one_blocks_pairs_in_the_same_order(db_path):
    with capped(db_path, 1) as s:
        assert s.lookup(mm(16, 1536, 512), "v0.18").latency_us == pytest.approx(5.5)
        miss = s.lookup(mm(24, 1536, 512), "v0.18")
    assert miss.reason is Reason.DIMENSION_BLOCKED
    assert outcomes(miss) == [
        (["M"], "insufficient_candidates"), (["K"], "insufficient_candidates"),
        (["N"], "insufficient_candidates"), (["M", "K"], "dimension_blocked"),
        (["M", "N"], "dimension_blocked"), (["K", "N"], "dimension_blocked"),
        (["M", "K", "N"], "dimension_blocked")]


def test_max_interpolation_dim_two_blocks_only_three_dimensions(db_path):
    with capped(db_path, 2) as s:
        assert s.lookup(mm(24, 1536, 512), "v0.18").latency_us == pytest.approx(6.0)
        miss = s.lookup(mm(24, 1536, 768), "v0.18")
    assert miss.reason is Reason.DIMENSION_BLOCKED
    assert outcomes(miss)[-1] == (["M", "K", "N"], "dimension_blocked")


def test_collinear_pair_is_degenerate(store):
    miss = store.lookup(mm(20, 2048, 512, op="test.mm_collinear"), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.DEGENERATE_CANDIDATES)
    assert (["M", "K"], "degenerate_candidates") in outcomes(miss)
    assert miss.details["target_axes"] == [20.0, 2048.0, 512.0]


def test_outside_the_hull_is_a_miss(store):
    miss = store.lookup(mm(60, 4000, 512, op="test.mm_triangle"), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_CONVEX_HULL)
    assert miss.details["last_geometry"]["axes"] == ["M", "K", "N"]
    assert (["M", "K"], "outside_convex_hull") in outcomes(miss)


def test_batched_matmul_keeps_batch_dims_in_the_regime(store):
    result = store.lookup(bmm(16, 2), "v0.18")
    assert result.latency_us == pytest.approx(5.0)
    assert result.details["target_regime"]["batch_dims"] == "16"
    assert result.details["axes"] == {"M": 2.0, "K": 128.0, "N": 512.0}


def test_transposed_output_alternate_serves_its_own_batch(store):
    # TransposeBatchMatMul writes (M, B, N); only it has batch 32
    result = store.lookup(bmm(32, 2), "v0.18")
    assert result.latency_us == pytest.approx(12.0)
    assert (result.details["kernel_type"], result.details["fallback_from"]) == (
        "TransposeBatchMatMul", "BatchMatMulV2")


def test_foreign_batch_is_a_regime_mismatch(store):
    miss = store.lookup(bmm(8, 2), "v0.18")
    assert miss.reason is Reason.REGIME_MISMATCH
    first = miss.details["attempted_kernels"][0]
    assert (first["kernel_points"], first["kernel_regimes"]) == (2, 1)


def test_target_that_is_not_a_matmul(store):
    bad = LeafOp.from_json({"op": "aten.mm.default",
                            "args": [{"shape": [24, 1024], "dtype": "bfloat16"},
                                     {"shape": [2048, 512], "dtype": "bfloat16"}],
                            "outputs": [{"shape": [24, 512], "dtype": "bfloat16"}]})
    miss = store.lookup(bad, "v0.18")
    assert miss.reason is Reason.TARGET_UNAVAILABLE
    assert "does not hold K=1024" in miss.details["attempted_kernels"][0]["message"]


def test_biased_call_never_borrows_two_input_rows(store):
    addmm = LeafOp.from_json({"op": "aten.addmm.default",
                              "args": [{"shape": [512], "dtype": "bfloat16"},
                                       {"shape": [24, 1024], "dtype": "bfloat16"},
                                       {"shape": [1024, 512], "dtype": "bfloat16"}],
                              "outputs": [{"shape": [24, 512], "dtype": "bfloat16"}]})
    miss = store.lookup(addmm, "v0.18")
    assert miss.reason is Reason.REGIME_MISMATCH
    assert miss.details["target_axes"] == [24.0, 1024.0, 512.0]
    assert miss.details["target_regime"]["input_count"] == 3


# --- unstated formats (format_resolution.py): the grid is ND, two rows at M 20 and 28 are NZ ---

def test_unstated_formats_that_two_regimes_answer_differently_are_a_miss_naming_both(store):
    result = store.lookup(mm(24, 1024, 512, fmt=None), "v0.18")
    assert result.reason is Reason.FORMAT_AMBIGUOUS
    (attempt,) = result.details["attempted_kernels"]
    # ND grid: f(24, 1024, 512) = 5.5; NZ rows: 50 + (24 - 20) / 8 * 10 = 55
    assert [(c["formats"], c["latency_us"]) for c in attempt["format_candidates"]] == [
        ({"args[0]": "ND", "args[1]": "ND"}, pytest.approx(5.5)),
        ({"args[0]": "ND", "args[1]": "FRACTAL_NZ"}, pytest.approx(55.0))]
    assert "state the format" in attempt["message"]


def test_unstated_formats_answer_when_one_regime_covers_the_target(store):
    result = store.lookup(mm(40, 1024, 512, fmt=None), "v0.18")  # NZ rows stop at M 28
    assert (result.source, result.latency_us) == (QuerySource.INTERPOLATED, pytest.approx(6.5))
    assert result.details["format_source"] == "inferred"
    assert result.details["resolved_formats"] == {"args[0]": "ND", "args[1]": "ND",
                                                  "outputs[0]": "ND"}


def test_a_stated_nz_weight_and_a_format_policy_give_the_nz_answer(store):
    stated = store.lookup(mm(24, 1024, 512, weight={"shape": [1024, 512], "dtype": "bfloat16",
                                                     "format": "FRACTAL_NZ"}), "v0.18")
    policy = {"ops": {"aten.mm.default": {"0": "ND", "1": "FRACTAL_NZ"}}}
    by_policy = store.lookup(mm(24, 1024, 512, fmt=None), "v0.18", format_policy=policy)
    half = store.lookup(mm(24, 1024, 512, fmt=None), "v0.18",
                        format_policy={"ops": {"aten.mm.default": {1: "FRACTAL_NZ"}}})
    assert stated.latency_us == by_policy.latency_us == half.latency_us == pytest.approx(55.0)
    assert (stated.details["format_source"], by_policy.details["format_source"],
            half.details["format_source"]) == ("default", "policy", "inferred")
    # "default": the output omits its format (ND by DESIGN §3); stating it makes all stated
    assert stated.details["format_sources"] == {"outputs[0]": "default"}


def test_a_per_run_default_format_states_every_unstated_tensor(store):
    result = store.lookup(mm(24, 1024, 512, fmt=None), "v0.18", format_policy={"default": "ND"})
    assert (result.latency_us, result.details["format_source"]) == (pytest.approx(5.5), "policy")


@pytest.mark.parametrize(("policy", "message"), [
    ({"ops": {"aten.nope.default": {"1": "ND"}}},
     "format_policy.ops: unknown op 'aten.nope.default' (not in the v0.18 mapping)"),
    ({"default": "NZ"}, "format_policy.default: unknown format 'NZ'"),
    ({"ops": {"aten.mm.default": {"weight-1": "ND"}}},
     "format_policy.ops['aten.mm.default']: 'weight-1' names no argument"),
    ({"formats": {}}, "format_policy: unknown key 'formats'"),
])
def test_a_bad_format_policy_is_a_value_error_naming_it(store, policy, message):
    with pytest.raises(ValueError) as error:
        store.lookup(mm(24, 1024, 512, fmt=None), "v0.18", format_policy=policy)
    assert str(error.value).startswith(message)


# ---- End to end on ../shared/perfdb v0.18 (expected latencies from
# tests.support.corpus_coordinates' reading of the CSVs, never from the store) ---------


@requires_perfdb
def test_matmul_exact_coordinate_of_a_transposed_weight(perfdb_store):
    points = coordinates("MatMulV2", mm_key)
    literal = {c[:3] for c in points if c[3] == 0}
    transposed = sorted(c for c, v in points.items() if c[3] == 1 and c[:3] not in literal
                        and c[1] != c[2] and len(v) == 1 and v[0] is not None)
    m, k, n, _ = transposed[0]
    result = perfdb_store.lookup(corpus_linear("aten.mm.default", m, k, n, "float16", "float16"),
                                 "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == points[transposed[0]][0]
    assert (result.details["method"], result.details["path"]) == ("exact_coordinate", "matmul")
    assert [a["reason"] for a in result.details["base_attempts"]] == ["no_exact_match"] * 3


@requires_perfdb
def test_matmul_interpolates_m(perfdb_store):
    points: dict[Coordinate, list[float | None]] = defaultdict(list)
    for (m, k, n, _), values in coordinates("MatMulV2", mm_key).items():
        points[(m, k, n)] += values
    m, expected = gap(points, (5120, 768))
    result = perfdb_store.lookup(corpus_linear("aten.mm.default", m, 5120, 768, "float16",
                                               "float16"),
                                 "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)
    assert result.details["axes"] == {"M": float(m), "K": 5120.0, "N": 768.0}


@requires_perfdb
def test_matmul_out_of_range_and_foreign_regime(perfdb_store):
    far = perfdb_store.lookup(corpus_linear("aten.mm.default", 10**6, 5120, 768, "bfloat16",
                                     "bfloat16"), "v0.18")
    assert far.reason is Reason.DIMENSION_BLOCKED
    assert far.details["attempted_kernels"][0]["interpolation_path"][0]["outcome"] == \
        "outside_range"
    foreign = perfdb_store.lookup(corpus_linear("aten.mm.default", 20, 5120, 768, "float32",
                                         "float32"), "v0.18")
    assert foreign.reason is Reason.REGIME_MISMATCH
    assert [a["kernel"] for a in foreign.details["attempted_kernels"]] == [
        "MatMulV2", "MatMulV3", "MatMulCommon"]
