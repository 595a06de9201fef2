"""Elementwise broadcast / shared-token (query_mode elementwise) on hand-computable fixtures
(RFC §4.2.1, §7.2).

Add, BF16, two same-shape inputs (pattern ``ss;ss``), rank-2 output: latencies lie on
the plane f = 2 + 0.5·axis_0 + 0.01·axis_1, measured at (8, 1024), (32, 1024),
(8, 4096), (32, 4096), (64, 4096) — so every 1-D and 2-D answer is the plane value,
whatever the triangulation. Foreign rows sit on target coordinates with latencies
that would show if they leaked.
"""

from __future__ import annotations

import pytest
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.mapping import load_mapping
from profstore.model.result import QuerySource, Reason
from profstore.paths.elementwise import ElementwisePath, broadcast_code

from tests.support.corpus_rows import (
    DEFAULT_ORDER,
    CsvDict,
    expected_measured,
    read_rows,
    select,
    shapes,
)
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.specialized_leaves import add as corpus_add
from tests.support.stores import opened_store

ADD, MUL, SUB = "aten.add.Tensor", "aten.mul.Tensor", "aten.sub.Tensor"
V13_DIR = "vllm0.13.0_torch2.8.0_cann8.3"
PROFILING = "Profiling Average Duration(us)"


def plane(a0: float, a1: float) -> float:
    return 2 + 0.5 * a0 + 0.01 * a1


def row(inputs: list, out: list, latency: float | str | None, dtype: str = "DT_BF16",
        **kw) -> Row:
    return Row(inputs, [dtype] * len(inputs), [out], [dtype], latency, **kw)


def same(a0: int, a1: int, latency: float | str, dtype: str = "DT_BF16") -> Row:
    return row([[a0, a1], [a0, a1]], [a0, a1], latency, dtype)


ADD_ROWS = [
    *[same(a0, a1, plane(a0, a1)) for a0, a1 in
      ((8, 1024), (32, 1024), (8, 4096), (32, 4096), (64, 4096))],
    row([[16, 1024], [16, 1]], [16, 1024], 999.0),       # pattern ss;sb
    row([[16, 1024], [1024]], [16, 1024], 555.0),        # pattern ss;bs
    same(16, 1024, 777.0, "FLOAT"),                       # another output dtype
    same(16, 4096, "0"),                                  # rejected at ingest
    row([(), ()], (), 2.5),                               # scalar output
]
MUL_ROWS = [row([[t, 8, 7168], [t, 8, 1]], [t, 8, 7168], lat)
            for t, lat in ((4, 10.0), (12, 14.0))]
MUL_ROWS.append(row([[8, 8, 6144], [8, 8, 1]], [8, 8, 6144], 500.0))
MUL_AICORE_ROWS = [row([[t, 7168], [t, 1]], [t, 7168], lat) for t, lat in ((8, 3.0), (32, 6.0))]
SUB_ROWS = [
    row([[8, 512], [8, 512]], [8, 512], 10.0),
    row([[32, 512], [32, 512]], [32, 512], 20.0),
    row([[16, 512], [16, 512]], [16, 512], None, columns={PROFILING: 100.0}),
    row([[1, 512], [1, 512]], [1, 512], 7.0),
]


def entry(kernel: str, *alternates: str, elementwise: bool = True) -> dict:
    found: dict = {"kernel_type": kernel}
    if alternates:
        found["alternate_kernel_types"] = list(alternates)
    if elementwise:
        found["query_mode"] = "elementwise"
    return found


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("elementwise")
    mapping = mapping_doc({ADD: entry("Add", "AddAiCore"), MUL: entry("Mul", "MulAiCore"),
                           SUB: entry("Sub")})
    write_version(root / "data", {"Add": ADD_ROWS, "Mul": MUL_ROWS,
                                  "MulAiCore": MUL_AICORE_ROWS, "Sub": SUB_ROWS}, mapping)
    v13 = mapping_doc({ADD: entry("Add"), MUL: entry("Mul", elementwise=False),
                       "aten.div.Tensor": entry("Div", "RealDiv", elementwise=False)})
    v13_mul = [row([[1, t, 7168], [1, t, 1]], [1, t, 7168], lat) for t, lat in ((8, 10.0),
                                                                                 (24, 18.0))]
    v13_div = [row([[t, 8], [t, 1]], [t, 8], lat, "FLOAT") for t, lat in ((8, 4.0), (24, 6.0))]
    write_version(root / "data", {"Mul": v13_mul, "RealDiv": v13_div}, v13, directory=V13_DIR)
    return build_database(root)


store = opened_store("db", scope="module")


def ew(op: str, inputs: list, out: list | None, dtype: str = "bfloat16") -> LeafOp:
    return LeafOp.from_json({
        "op": op, "args": [{"shape": s, "dtype": dtype} for s in inputs],
        "outputs": [] if out is None else [{"shape": out, "dtype": dtype}]})


def add(a0: int, a1: int, dtype: str = "bfloat16") -> LeafOp:
    return ew(ADD, [[a0, a1], [a0, a1]], [a0, a1], dtype)


def test_full_output_shape_is_an_exact_coordinate(store):
    result = store.lookup(ew(ADD, [[1, 32, 4096], [32, 4096]], [1, 32, 4096]), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == pytest.approx(plane(32, 4096))
    assert result.details["method"] == "exact_coordinate"
    assert result.details["exact_owner"] == "path"
    assert result.details["axes"] == {"axis_0": 32.0, "axis_1": 4096.0}


def test_axis_0_first_with_axis_1_fixed(store):
    result = store.lookup(add(16, 1024), "v0.18")
    assert result.latency_us == pytest.approx(plane(16, 1024))
    assert result.details["method"] == "linear_1d"
    assert result.details["interpolation_path"][0]["axes"] == ["axis_0"]


def test_axis_1_fallback_with_axis_0_fixed(store):
    result = store.lookup(add(8, 2048), "v0.18")
    assert result.latency_us == pytest.approx(plane(8, 2048))
    steps = result.details["interpolation_path"]
    assert [(s["axes"], s["outcome"]) for s in steps] == [
        (["axis_0"], "insufficient_candidates"), (["axis_1"], "interpolated")]


def test_direct_shape_2d_with_success_details(store):
    result = store.lookup(add(16, 2048), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(plane(16, 2048))
    d = result.details
    assert (d["method"], d["interpolation_dim"], result.confidence) == ("simplex_2d", 2, 0.8)
    assert d["axes"] == {"axis_0": 16.0, "axis_1": 2048.0}
    assert len(d["matched_rows"]) == 3
    assert sum(r["weight"] for r in d["matched_rows"]) == pytest.approx(1.0)
    assert d["candidate_count"] == 5
    assert d["boundary"]["axis_min"] == [8.0, 1024.0]
    assert d["target_regime"] == {"kernel": "Add", "output_rank": 2, "input_count": 2,
                                  "broadcast_pattern": "ss;ss", "output_dtype": "DT_BF16",
                                  "output_tail": ""}
    assert [s["axes"] for s in d["interpolation_path"]] == [["axis_0"], ["axis_1"],
                                                            ["axis_0", "axis_1"]]


@pytest.mark.parametrize(("dim", "leaf", "expected"), [
    (0, add(16, 1024), None), (0, add(32, 4096), plane(32, 4096)),
    (1, add(16, 1024), plane(16, 1024)), (1, add(16, 2048), None),
    (2, add(16, 2048), plane(16, 2048)),
])
def test_max_interpolation_dim(db, dim, leaf, expected):
    overlay = load_mapping(
        f"interpolation_policy: {{kernel_overrides: {{Add: {{max_interpolation_dim: {dim}}}}}}}\n"
        "operator_mappings: {}\n", is_text=True)
    with Store.open(db, mapping_overlay=overlay) as s:
        result = s.lookup(leaf, "v0.18")
    if expected is None:
        assert result.reason is Reason.DIMENSION_BLOCKED
    else:
        assert result.latency_us == pytest.approx(expected)


def test_rank_above_two_uses_axis_0_with_the_tail_fixed(store):
    result = store.lookup(ew(MUL, [[8, 8, 7168], [8, 8, 1]], [8, 8, 7168]), "v0.18")
    assert result.latency_us == pytest.approx(12.0)
    assert result.details["axes"] == {"axis_0": 8.0}
    assert result.details["target_regime"]["output_tail"] == "8,7168"
    other_tail = store.lookup(ew(MUL, [[1, 8, 8, 6144], [1, 8, 8, 1]], [1, 8, 8, 6144]), "v0.18")
    assert (other_tail.latency_us, other_tail.source) == (500.0, QuerySource.MEASURED)


@pytest.mark.parametrize(("inputs", "expected", "source"), [
    ([[16, 1024], [16, 1024]], plane(16, 1024), QuerySource.INTERPOLATED),
    ([[16, 1024], [16, 1]], 999.0, QuerySource.MEASURED),
    ([[16, 1024], [1, 1024]], 555.0, QuerySource.MEASURED),
], ids=["same", "broadcast_last", "broadcast_rows"])
def test_broadcast_pattern_isolates_rows(store, inputs, expected, source):
    result = store.lookup(ew(ADD, inputs, [16, 1024]), "v0.18")
    assert result.latency_us == pytest.approx(expected)
    assert result.source is source


@pytest.mark.parametrize(("tensor", "output", "code"), [
    ((16, 1), (16, 1024), "sb"), ((1024,), (16, 1024), "bs"), ((1, 1024), (16, 1024), "bs"),
    ((1024,), (1, 1024), "ms"), ((), (4, 8), "bb"), ((3, 1024), (16, 1024), None),
])
def test_broadcast_code(tensor, output, code):
    assert broadcast_code(tensor, output) == code


def test_cross_dtype_rows_are_never_borrowed_or_rescaled(store):
    assert store.lookup(add(16, 1024, "float32"), "v0.18").latency_us == 777.0
    assert store.lookup(add(16, 1024, "float16"), "v0.18").latency_us == \
        pytest.approx(plane(16, 1024))
    result = store.lookup(add(32, 4096, "float32"), "v0.18")
    assert result.latency_us is None
    assert result.reason is Reason.INSUFFICIENT_CANDIDATES
    base = store.lookup(add(32, 4096, "float32"), "v0.18", interpolation=False)
    assert base.details["method"] == "base_elementwise_byte_ratio"
    assert base.latency_us == pytest.approx(plane(32, 4096) * 2)


def test_alternate_kernel_in_mapping_order(store):
    result = store.lookup(ew(MUL, [[16, 7168], [16, 1]], [16, 7168]), "v0.18")
    assert result.latency_us == pytest.approx(4.0)
    assert (result.details["kernel_type"], result.details["fallback_from"]) == ("MulAiCore", "Mul")


def test_every_attempted_kernel_is_kept_in_the_miss(store):
    result = store.lookup(ew(MUL, [[64, 7168], [64, 1]], [64, 7168]), "v0.18")
    assert result.reason is Reason.OUTSIDE_RANGE
    assert [(a["kernel"], a["reason"]) for a in result.details["attempted_kernels"]] == [
        ("Mul", "regime_mismatch"), ("MulAiCore", "outside_range")]


def test_outside_the_hull_misses_with_details(store):
    result = store.lookup(add(128, 4096), "v0.18")
    assert result.reason is Reason.OUTSIDE_CONVEX_HULL
    d = result.details
    assert d["target_axes"] == [128.0, 4096.0]
    assert d["target_regime"]["broadcast_pattern"] == "ss;ss"
    assert [(a["kernel"], a["reason"]) for a in d["attempted_kernels"]] == [
        ("Add", "outside_convex_hull"), ("AddAiCore", "csv_not_found")]
    assert d["last_geometry"]["axes"] == ["axis_0", "axis_1"]


def test_latency_source_purity(store):
    result = store.lookup(ew(SUB, [[12, 512], [12, 512]], [12, 512]), "v0.18")
    assert result.latency_us == pytest.approx(10 + 10 * 4 / 24)
    assert result.details["latency_column"] == "Average Duration(us)"
    exact = store.lookup(ew(SUB, [[16, 512], [16, 512]], [16, 512]), "v0.18")
    assert (exact.latency_us, exact.details["latency_column"]) == (100.0, PROFILING)


def test_invalid_latency_row_is_rejected_and_neighbours_answer(store):
    result = store.lookup(add(16, 4096), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(plane(16, 4096))


def test_regime_mismatch_and_insufficient_candidates(store):
    mismatch = store.lookup(add(16, 1024, "int32"), "v0.18")
    assert mismatch.reason is Reason.REGIME_MISMATCH
    assert mismatch.details["attempted_kernels"][0]["kernel_points"] == 8
    single = store.lookup(add(24, 1024, "float32"), "v0.18")
    assert single.reason is Reason.INSUFFICIENT_CANDIDATES


@pytest.mark.parametrize(("leaf", "reason"), [
    (ew(ADD, [[16, 1024], [16, 1024]], None), Reason.REQUIRED_FIELD_MISSING),
    (ew(ADD, [[16, 1024], [3, 1024]], [16, 1024]), Reason.TARGET_UNAVAILABLE),
], ids=["no_output", "not_broadcastable"])
def test_target_construction_failures(store, leaf, reason):
    result = store.lookup(leaf, "v0.18")
    assert result.latency_us is None
    assert result.reason is reason


def test_scalar_output_keeps_the_base_elementwise_lookup(store):
    scalar = ew(ADD, [(), ()], ())
    assert ElementwisePath().exact_owner_for(scalar) is False
    assert ElementwisePath().exact_owner_for(add(1, 8)) is True
    result = store.lookup(scalar, "v0.18")
    assert (result.latency_us, result.details["method"]) == (2.5, "base_elementwise")


def test_v013_mul_and_div_keep_generic_compute(store):
    mul = store.lookup(ew(MUL, [[1, 16, 7168], [1, 16, 1]], [1, 16, 7168]), "v0.13")
    assert (mul.details["path"], mul.details["selector"]) == ("generic", "generic")
    assert mul.latency_us == pytest.approx(14.0)
    div = store.lookup(ew("aten.div.Tensor", [[16, 8], [16, 1]], [16, 8], "float32"), "v0.13")
    assert (div.details["path"], div.details["fallback_from"]) == ("generic", "Div")
    assert div.latency_us == pytest.approx(5.0)


def test_one_row_output_keeps_its_token_axis(store):
    batched = store.lookup(ew(SUB, [[1, 1, 512], [1, 512]], [1, 1, 512]), "v0.18")
    assert (batched.latency_us, batched.source) == (7.0, QuerySource.MEASURED)
    assert batched.details["axes"] == {"axis_0": 1.0, "axis_1": 512.0}
    result = store.lookup(ew(SUB, [[4, 512], [4, 512]], [4, 512]), "v0.18")
    assert result.latency_us == pytest.approx(7 + 3 * 3 / 7)


# ---- End to end on ../shared/perfdb v0.18 (expected measured latencies read from the
# CSVs by tests.support.corpus_rows; the latency values are synthetic) ----------------


def _plain_add(row: CsvDict, tokens: int) -> bool:
    inputs = [s.removeprefix("1,") if s.count(",") == 2 else s for s in shapes(row)]
    output = shapes(row, "Output Shapes")[0]
    return (row["Output Data Types"] == "DT_BF16" and inputs == [f"{tokens},7168"] * 2
            and output in (f"{tokens},7168", f"1,{tokens},7168"))


def test_elementwise_full_output_shape_is_measured(perfdb_store):
    rows = select(read_rows("Add"), lambda r: _plain_add(r, 30))
    result = perfdb_store.lookup(corpus_add(30), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.details["method"] == "exact_coordinate"
    assert result.latency_us == pytest.approx(expected_measured(rows, DEFAULT_ORDER))


def test_elementwise_in_range_and_misses(perfdb_store):
    assert not [r for r in read_rows("Add") if _plain_add(r, 24)]
    inside = perfdb_store.lookup(corpus_add(24), "v0.18")
    assert inside.source is QuerySource.INTERPOLATED
    assert perfdb_store.lookup(corpus_add(100000), "v0.18").reason is Reason.OUTSIDE_CONVEX_HULL
    assert perfdb_store.lookup(corpus_add(30, "int32"), "v0.18").reason is Reason.REGIME_MISMATCH


def test_v013_mul_stays_on_generic_compute(perfdb_store):
    leaf = LeafOp.from_json({"op": "aten.mul.Tensor", "args": [
        {"shape": [1, 30, 7168], "dtype": "bfloat16"}, {"shape": [1, 30, 1], "dtype": "bfloat16"}],
        "outputs": [{"shape": [1, 30, 7168], "dtype": "bfloat16"}]})
    assert perfdb_store.lookup(leaf, "v0.13").details["path"] == "generic"
    assert perfdb_store.lookup(leaf, "v0.18").details["path"] == "elementwise"
