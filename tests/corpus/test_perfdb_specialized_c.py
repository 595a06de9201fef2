"""End to end on ../shared/perfdb v0.18: MatMul (Phase 1), quantized_matmul, compute_scale.

Expected latencies come from this file's own reading of the CSVs (rows whose replay column
``Average Duration(us)`` is valid, at coordinates no other row shares), never from the
store.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.specialized_leaves import SQL, linear, quantize

pytestmark = requires_perfdb

V18 = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / "vllm0.18.0_torch2.9.0_cann8.5"

Coordinate = tuple[int, ...]


def shapes(cell: str, formats: str | None = None) -> list[tuple[int, ...]]:
    fmts = formats.split(";") if formats else []
    found = []
    for i, part in enumerate(cell.strip('"').split(";")):
        dims = tuple(int(d) for d in part.split(",")) if part not in ("", "()") else ()
        if i < len(fmts) and fmts[i] == "FRACTAL_NZ" and len(dims) >= 4:
            *lead, h, w, bh, bw = dims
            dims = (*lead, h * bw, w * bh)
        found.append(dims)
    return found


def valid(row: dict[str, str], column: str = "Average Duration(us)") -> float | None:
    try:
        value = float(row[column])
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def coordinates(kernel: str, key: Callable[[dict[str, str]], Coordinate | None]
                ) -> dict[Coordinate, list[float | None]]:
    """Coordinate -> the Average latency of every row there (None: not a valid Average)."""
    found: dict[Coordinate, list[float | None]] = defaultdict(list)
    with open(V18 / f"{kernel}.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            coordinate = key(row)
            if coordinate is not None:
                found[coordinate].append(valid(row))
    return found


def single(points: dict[Coordinate, list[float | None]], coordinate: Coordinate) -> float:
    values = points[coordinate]
    assert len(values) == 1 and values[0] is not None, values
    return values[0]


def gap(points: dict[Coordinate, list[float | None]], fixed: Coordinate
        ) -> tuple[int, float]:
    """A target M strictly between two neighbouring measured M (valid, unique Average)
    at the fixed tail, with its expected linear interpolation."""
    line = sorted((c[0], v[0]) for c, v in points.items()
                  if c[1:] == fixed and len(v) == 1 and v[0] is not None)
    for (m0, l0), (m1, l1) in zip(line, line[1:]):
        target = (m0 + m1) // 2
        if m1 - m0 >= 2 and (target, *fixed) not in points:
            return target, l0 + (l1 - l0) * (target - m0) / (m1 - m0)
    raise AssertionError(f"no gap at {fixed}")


def qbmm_key(row: dict[str, str]) -> Coordinate | None:
    if row["Input Formats"].split(";")[:2] != ["ND", "FRACTAL_NZ"]:
        return None
    x = shapes(row["Input Shapes"], row["Input Formats"])[0]
    out = shapes(row["Output Shapes"])[0]
    return (math.prod(x[:-1]), x[-1], out[-1])


def dq_key(dtype: str) -> Callable[[dict[str, str]], Coordinate | None]:
    def key(row: dict[str, str]) -> Coordinate | None:
        x = shapes(row["Input Shapes"])[0]
        outs = shapes(row["Output Shapes"])
        if row["Input Data Types"] != dtype or len(outs) != 2 or outs[1] != x[:-1]:
            return None
        return (math.prod(x[:-1]), x[-1])
    return key


def mm_key(row: dict[str, str]) -> Coordinate | None:
    if row["Input Formats"] != "ND;ND":
        return None
    x, weight = shapes(row["Input Shapes"], row["Input Formats"])
    out = shapes(row["Output Shapes"])[0]
    return (math.prod(x[:-1]), x[-1], out[-1], int(weight == (out[-1], x[-1])))


@pytest.fixture(scope="module")
def qbmm():
    return coordinates("QuantBatchMatmulV3", qbmm_key)


@pytest.fixture(scope="module")
def dynamic_quant():
    return coordinates("DynamicQuant", dq_key("DT_BF16"))


def test_quantized_matmul_measured_coordinate(perfdb_store, qbmm):
    result = perfdb_store.lookup(linear(SQL, 20, 7168, 4096, "int8", "float16"), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == single(qbmm, (20, 7168, 4096))
    assert (result.details["method"], result.details["exact_owner"]) == (
        "exact_coordinate", "path")


def test_quantized_matmul_interpolates_m(perfdb_store, qbmm):
    m, expected = gap(qbmm, (7168, 4096))
    result = perfdb_store.lookup(linear(SQL, m, 7168, 4096, "int8", "float16"), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)
    assert result.details["method"] == "linear_1d"


def test_quantized_matmul_out_of_range_is_outside_range_despite_the_1d_cap(perfdb_store, qbmm):
    """v0.18 caps QuantBatchMatmulV3 at 1-D; a target beyond the measured M is still
    reported as outside_range (a bound says more than the blocked 2-D groups)."""
    top = max(c[0] for c in qbmm if c[1:] == (7168, 4096))
    miss = perfdb_store.lookup(linear(SQL, top * 4, 7168, 4096, "int8", "float16"), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_RANGE)
    first = miss.details["attempted_kernels"][0]["interpolation_path"][0]
    assert (first["axes"], first["outcome"]) == (["M"], "outside_range")


def test_fp8_linear_never_uses_int8_rows(perfdb_store):
    leaf = linear("tensor_cast.fp8_linear.default", 20, 7168, 4096, "float8_e4m3fn",
                  "bfloat16")
    miss = perfdb_store.lookup(leaf, "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.REGIME_MISMATCH)
    assert miss.details["attempted_kernels"][0]["kernel_points"] == 2979


def test_dynamic_quant_measured_coordinate(perfdb_store, dynamic_quant):
    result = perfdb_store.lookup(quantize(20, 7168), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == single(dynamic_quant, (20, 7168))
    assert result.details["scale_mode"] == "per_token"


def test_dynamic_quant_interpolates_m(perfdb_store, dynamic_quant):
    m, expected = gap(dynamic_quant, (7168,))
    result = perfdb_store.lookup(quantize(m, 7168), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)


def test_dynamic_quant_fp16_reads_its_own_rows(perfdb_store):
    fp16 = coordinates("DynamicQuant", dq_key("DT_FLOAT16"))
    result = perfdb_store.lookup(quantize(20, 5120, "float16"), "v0.18")
    assert result.latency_us == single(fp16, (20, 5120))


def test_dynamic_quant_out_of_range(perfdb_store, dynamic_quant):
    top = max(c[0] for c in dynamic_quant if c[1:] == (7168,))
    miss = perfdb_store.lookup(quantize(top * 2, 7168), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.OUTSIDE_CONVEX_HULL)
    primary = miss.details["attempted_kernels"][0]
    assert primary["interpolation_path"][0]["outcome"] == "outside_range"


def test_dynamic_quant_foreign_regime_and_refused_alternates(perfdb_store):
    miss = perfdb_store.lookup(quantize(20, 5120, "float16", scale=[]), "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.REGIME_MISMATCH)
    kernels = [(a["kernel"], a["reason"]) for a in miss.details["attempted_kernels"]]
    assert kernels == [("DynamicQuant", "regime_mismatch"), ("AscendQuantV2", "regime_mismatch"),
                       ("AscendQuantV2Aicore", "regime_mismatch")]
    with open(V18 / "AscendQuantV2.csv", newline="") as handle:
        rows = sum(1 for row in csv.DictReader(handle)
                   if valid(row) or valid(row, "Profiling Average Duration(us)"))
    refused = miss.details["attempted_kernels"][1]["path_refusals"]
    assert sum(refused.values()) == rows


def test_dynamic_block_quant_has_no_csv(perfdb_store):
    leaf = LeafOp.from_json({
        "op": "tensor_cast.dynamic_quantize_mxfp4.default",
        "args": [{"shape": [20, 7168], "dtype": "bfloat16"}, 32],
        "outputs": [{"shape": [20, 3584], "dtype": "float4_e2m1fn_x2"},
                    {"shape": [20, 224], "dtype": "float32"}]})
    miss = perfdb_store.lookup(leaf, "v0.18")
    assert (miss.latency_us, miss.reason) == (None, Reason.CSV_NOT_FOUND)


def test_matmul_exact_coordinate_of_a_transposed_weight(perfdb_store):
    points = coordinates("MatMulV2", mm_key)
    literal = {c[:3] for c in points if c[3] == 0}
    transposed = sorted(c for c, v in points.items() if c[3] == 1 and c[:3] not in literal
                        and c[1] != c[2] and len(v) == 1 and v[0] is not None)
    m, k, n, _ = transposed[0]
    result = perfdb_store.lookup(linear("aten.mm.default", m, k, n, "float16", "float16"),
                                 "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == points[transposed[0]][0]
    assert (result.details["method"], result.details["path"]) == ("exact_coordinate", "matmul")
    assert [a["reason"] for a in result.details["base_attempts"]] == ["no_exact_match"] * 3


def test_matmul_interpolates_m(perfdb_store):
    points: dict[Coordinate, list[float | None]] = defaultdict(list)
    for (m, k, n, _), values in coordinates("MatMulV2", mm_key).items():
        points[(m, k, n)] += values
    m, expected = gap(points, (5120, 768))
    result = perfdb_store.lookup(linear("aten.mm.default", m, 5120, 768, "float16", "float16"),
                                 "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(expected)
    assert result.details["axes"] == {"M": float(m), "K": 5120.0, "N": 768.0}


def test_matmul_out_of_range_and_foreign_regime(perfdb_store):
    far = perfdb_store.lookup(linear("aten.mm.default", 10**6, 5120, 768, "bfloat16",
                                     "bfloat16"), "v0.18")
    assert far.reason is Reason.DIMENSION_BLOCKED
    assert far.details["attempted_kernels"][0]["interpolation_path"][0]["outcome"] == \
        "outside_range"
    foreign = perfdb_store.lookup(linear("aten.mm.default", 20, 5120, 768, "float32",
                                         "float32"), "v0.18")
    assert foreign.reason is Reason.REGIME_MISMATCH
    assert [a["kernel"] for a in foreign.details["attempted_kernels"]] == [
        "MatMulV2", "MatMulV3", "MatMulCommon"]
