"""Phase 1 interpolation regressions the Phase 2 RFC builds on (RFC §7.1, §7.3 items 2, 8, 9):
measured coordinates, latency-column purity, semantic uniqueness, PARTIAL preservation,
the disable switch, expected input formats, fail-closed selectors, and one leaf going
through exact lookup, then interpolation, counted once."""

from __future__ import annotations

import pytest
from profstore.model.latency_column import PROFILING_AVERAGE
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.fia import decode, decode_row, make_store
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.stores import opened_store

BF16 = "DT_BF16"
AVERAGE = "Average Duration(us)"
NORM = "tensor_cast.rms_norm.default"
PURE = "test.pure_columns"
MIXED = "test.mixed_columns"
UNIQUE = "test.unique"
QUANT_NORM = "tensor_cast.rms_norm_dynamic_quant_symmetric.default"
MM_NZ, MM_ND = "test.mm_expected_nz", "test.mm_plain"


def rows_of(tokens: int, latency: float | None, width: int = 7168, **columns) -> Row:
    return Row([[tokens, width], [width]], [BF16, BF16], [[tokens, width]], [BF16], latency,
               columns=columns)


def mm(m: int, latency: float, nz: bool) -> Row:
    weight = [96, 192, 16, 16] if nz else [1536, 3072]
    return Row([[m, 1536], weight], [BF16, BF16], [[m, 3072]], [BF16], latency,
               formats=["ND", "FRACTAL_NZ" if nz else "ND"])


KERNELS = {
    "RmsNorm": [rows_of(8, 10.0), rows_of(16, 14.0), rows_of(64, 30.0)],
    "PureCols": [rows_of(8, 10.0), rows_of(16, None, **{PROFILING_AVERAGE: 14.0})],
    "MixedCols": [rows_of(8, 10.0), rows_of(16, None, **{PROFILING_AVERAGE: 14.0}),
                  rows_of(32, 30.0)],
    "UniqueRows": [rows_of(8, 10.0), rows_of(16, 14.0), rows_of(64, 30.0), rows_of(64, 34.0),
                   rows_of(128, 50.0)],
    "DynamicQuant": [rows_of(4, 3.0), rows_of(32, 9.0)],
    "MatMulV2": [mm(8, 10.0, True), mm(32, 30.0, True), mm(4, 50.0, False),
                 mm(36, 90.0, False)],
}
ENTRIES = {
    NORM: {"kernel_type": "RmsNorm"},
    PURE: {"kernel_type": "PureCols"},
    MIXED: {"kernel_type": "MixedCols"},
    UNIQUE: {"kernel_type": "UniqueRows"},
    QUANT_NORM: {"composite": True, "sub_kernels": ["RmsNorm", "DynamicQuant"]},
    MM_NZ: {"kernel_type": "MatMulV2", "expected_input_formats": ["ND", "FRACTAL_NZ"]},
    MM_ND: {"kernel_type": "MatMulV2"},
    "test.future_scale": {"kernel_type": "RmsNorm", "compute_subcategory": "future_scale"},
}
SELECTION = {"kernel_overrides": {"UniqueRows": {"require_semantic_unique": True}}}


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("phase1")
    write_version(root / "data", KERNELS, mapping_doc(ENTRIES, query_selection_policy=SELECTION))
    return build_database(root)


store = opened_store("store_db", scope="module")


def norm(tokens: int, op: str = NORM) -> LeafOp:
    x = {"shape": [tokens, 7168], "dtype": "bfloat16"}
    return LeafOp.from_json({"op": op, "args": [x, {"shape": [7168], "dtype": "bfloat16"}, 1e-6],
                             "outputs": [x]})


def matmul(m: int, op: str, fmt: str | None = None) -> LeafOp:
    """``fmt`` states both operands' format; None leaves them unstated."""
    stated = {"format": fmt}
    return LeafOp.from_json({"op": op, "args": [
        {"shape": [m, 1536], "dtype": "bfloat16", **stated},
        {"shape": [1536, 3072], "dtype": "bfloat16", **stated}],
        "outputs": [{"shape": [m, 3072], "dtype": "bfloat16"}]})


def test_measured_coordinate_is_measured_not_interpolated(tmp_path):
    rows = [decode_row(256, 1, 10.0), decode_row(1024, 1, 20.0)]
    with make_store(tmp_path, rows) as s:
        result = s.lookup(decode(1024), "v0.18")
    assert (result.latency_us, result.source) == (20.0, QuerySource.MEASURED)
    assert (result.details["method"], result.details["interpolation_dim"]) == \
        ("exact_coordinate", 0)
    assert result.confidence == 1.0


def test_a_profiling_row_is_a_point_of_its_own_column(store):
    exact = store.lookup(norm(16, PURE), "v0.18")
    assert (exact.latency_us, exact.details["latency_column"]) == (14.0, PROFILING_AVERAGE)
    # 12 lies between an Average row (8) and a Profiling row (16): never one line
    between = store.lookup(norm(12, PURE), "v0.18")
    assert between.reason is Reason.INSUFFICIENT_CANDIDATES
    columns = {p["latency_column"] for p in
               between.details["attempted_kernels"][0]["interpolation_path"]}
    assert columns == {AVERAGE, PROFILING_AVERAGE}


def test_interpolation_stays_inside_one_column(store):
    result = store.lookup(norm(12, MIXED), "v0.18")
    assert result.latency_us == pytest.approx(10.0 + 20.0 * 4 / 24)
    assert result.details["latency_column"] == AVERAGE
    assert [r["line"] for r in result.details["matched_rows"]] == [2, 4]


def test_require_semantic_unique_refuses_disagreeing_duplicates(store):
    exact = store.lookup(norm(64, UNIQUE), "v0.18")
    assert exact.latency_us is None
    assert exact.reason is Reason.AMBIGUOUS_DUPLICATES
    assert exact.details["base_attempts"][0]["reason"] == "ambiguous_duplicates"
    # 40: the ambiguous 64 is left out, so the line runs from 16 (14.0) to 128 (50.0)
    between = store.lookup(norm(40, UNIQUE), "v0.18")
    assert between.latency_us == pytest.approx(14.0 + 36.0 * 24 / 112)
    assert between.details["interpolation_path"][0]["ambiguous_excluded"] == 2


def test_duplicates_merge_by_median_without_the_policy(store):
    assert store.lookup(norm(64), "v0.18").latency_us == 30.0


def test_partial_composite_is_preserved_unchanged(store):
    # DynamicQuant has rows at 4 and 32 but none at 8: the base composite is PARTIAL and
    # the wrapper neither interpolates children nor aggregates anew
    with_wrapper = store.lookup(norm(8, QUANT_NORM), "v0.18")
    without = store.lookup(norm(8, QUANT_NORM), "v0.18", interpolation=False)
    for result in (with_wrapper, without):
        assert (result.latency_us, result.source) == (10.0, QuerySource.PARTIAL)
        assert result.reason is Reason.PARTIAL_COMPOSITE
        assert result.details["hit_kernels"] == {"RmsNorm": 10.0}
        assert result.details["missed_kernels"] == {"DynamicQuant": "no_exact_match"}


def test_disable_switch_returns_the_base_result_alone(store):
    hit = store.lookup(norm(16), "v0.18", interpolation=False)
    assert (hit.latency_us, hit.details["method"]) == (14.0, "base_exact")
    miss = store.lookup(norm(12), "v0.18", interpolation=False)
    assert (miss.latency_us, miss.reason) == (None, Reason.NO_EXACT_MATCH)
    assert miss.details["note"] == "interpolation disabled"
    assert miss.details["attempted_kernels"] == []


def test_expected_input_formats_choose_the_weight_layout(store):
    # M = 16: NZ rows 8 → 10.0, 32 → 30.0; ND rows 4 → 50.0, 36 → 90.0
    nz = store.lookup(matmul(16, MM_NZ), "v0.18")
    assert nz.latency_us == pytest.approx(10.0 + 20.0 * 8 / 24)
    assert nz.details["target_regime"]["formats"] == "ND;FRACTAL_NZ"
    plain = store.lookup(matmul(16, MM_ND, "ND"), "v0.18")
    assert plain.latency_us == pytest.approx(50.0 + 40.0 * 12 / 32)
    assert plain.details["target_regime"]["formats"] == "ND;ND"
    # without expected formats an unstated weight could be either layout: both regimes
    # answer, differently, so the lookup says so instead of choosing
    unstated = store.lookup(matmul(16, MM_ND), "v0.18")
    assert unstated.reason is Reason.FORMAT_AMBIGUOUS
    assert sorted(c["latency_us"] for c in
                  unstated.details["attempted_kernels"][0]["format_candidates"]) == [
        pytest.approx(10.0 + 20.0 * 8 / 24), pytest.approx(50.0 + 40.0 * 12 / 32)]


def test_unknown_compute_subcategory_fails_closed(store):
    result = store.lookup(norm(16, "test.future_scale"), "v0.18")
    assert result.latency_us is None
    assert result.reason is Reason.COMPUTE_SUBCATEGORY_UNKNOWN


def test_one_leaf_exact_first_then_interpolation_counted_once(store):
    """RFC §3.2 item 5: the measured leaf is answered by the exact lookup alone; its
    neighbour reaches interpolation only after its own exact lookup missed; the caller
    sums the two answers and nothing is counted twice."""
    measured, neighbour = norm(16), norm(12)
    results = store.lookup_many([measured, neighbour, measured], "v0.18")
    first, second, again = results
    assert (first.latency_us, first.source, first.details["exact_owner"]) == \
        (14.0, QuerySource.MEASURED, "base")
    assert "interpolation_path" not in first.details
    assert (second.source, second.details["exact_owner"]) == (QuerySource.INTERPOLATED, "base")
    assert [a["reason"] for a in second.details["base_attempts"]] == ["no_exact_match"]
    assert second.latency_us == pytest.approx(12.0)
    assert again == first
    assert sum(r.latency_us for r in results[:2]) == pytest.approx(14.0 + 12.0)


def test_attention_leaf_skips_the_base_and_is_counted_once(tmp_path):
    rows = [decode_row(256, 1, 10.0), decode_row(1024, 1, 20.0)]
    with make_store(tmp_path, rows) as s:
        exact, between = s.lookup_many([decode(256), decode(576)], "v0.18")
    for result in (exact, between):
        assert result.details["exact_owner"] == "path"
        assert "base_attempts" not in result.details
    assert (exact.latency_us, between.latency_us) == (10.0, pytest.approx(15.0))
    assert exact.latency_us + between.latency_us == pytest.approx(25.0)
