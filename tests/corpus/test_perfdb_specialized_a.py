"""End to end on ../shared/perfdb v0.18: DFC (moe_fused), elementwise and MLA cache update.

Expected measured latencies are read from the CSVs here, by this module's own parsing
(the latency values are synthetic; only the format and the quirks are real).
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Callable

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.paths import PERFDB
from tests.support.specialized_leaves import add, dfc, mla

V18 = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / "vllm0.18.0_torch2.9.0_cann8.5"
AVERAGE, PROFILING = "Average Duration(us)", "Profiling Average Duration(us)"
DEFAULT_ORDER = (AVERAGE, PROFILING, "Duration(us)", "Median Duration(us)")
PROFILING_FIRST = (PROFILING, AVERAGE, "Duration(us)", "Median Duration(us)")

CsvDict = dict[str, str]


def read_rows(kernel: str) -> list[CsvDict]:
    with open(V18 / f"{kernel}.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def shapes(row: CsvDict, column: str = "Input Shapes") -> list[str]:
    return row[column].strip('"').split(";")


def _value(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def expected_measured(rows: list[CsvDict], order: tuple[str, ...]) -> float:
    """The median of the rows whose selected column is the most preferred one present."""
    chosen = []
    for row in rows:
        column = next(c for c in order if _value(row.get(c)) is not None)
        chosen.append((order.index(column), _value(row[column])))
    best = min(rank for rank, _ in chosen)
    return statistics.median(v for rank, v in chosen if rank == best)


def select(rows: list[CsvDict], keep: Callable[[CsvDict], bool]) -> list[CsvDict]:
    found = [r for r in rows if keep(r)]
    assert found, "the corpus no longer holds the rows this test relies on"
    return found


# ---- DispatchFFNCombine ---------------------------------------------------------------


def dfc_rows(tokens: int, ep: str) -> list[CsvDict]:
    return select(read_rows("DispatchFFNCombine"), lambda r: shapes(r)[:3] == [
        f"{tokens},7168", "16,7168,4096", "16,2048,7168"] and r["EP Size"] == ep)


def test_dfc_measured_coordinate_excludes_blank_ep_duplicates(perfdb_store):
    valid = dfc_rows(64, "16")
    blank = dfc_rows(64, "")
    assert (len(valid), len(blank)) == (2, 1)
    result = perfdb_store.lookup(dfc(64), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == pytest.approx(expected_measured(valid, DEFAULT_ORDER))
    assert result.details["duplicates"]["count"] == 2
    assert result.latency_us != pytest.approx(expected_measured(valid + blank, DEFAULT_ORDER))


def test_dfc_in_range_coordinate_interpolates(perfdb_store):
    result = perfdb_store.lookup(dfc(100), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert [r["axes"] for r in result.details["matched_rows"]] == [[96.0], [128.0]]


def test_dfc_out_of_range_and_foreign_subtypes_miss(perfdb_store):
    assert perfdb_store.lookup(dfc(20000), "v0.18").reason is Reason.OUTSIDE_RANGE
    for leaf in (dfc(64, "", "bfloat16"), dfc(64, "_quant_int4", "int4"), dfc(64, ep=8)):
        assert perfdb_store.lookup(leaf, "v0.18").reason is Reason.REGIME_MISMATCH


def test_dfc_v015_has_no_ep_column(perfdb_store):
    result = perfdb_store.lookup(dfc(16), "v0.15")
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["attempted_kernels"][0]["path_refusals"] == {
        "required_field_missing: EP Size column missing": 3}


# ---- Elementwise ------------------------------------------------------------------------


def _plain_add(row: CsvDict, tokens: int) -> bool:
    inputs = [s.removeprefix("1,") if s.count(",") == 2 else s for s in shapes(row)]
    output = shapes(row, "Output Shapes")[0]
    return (row["Output Data Types"] == "DT_BF16" and inputs == [f"{tokens},7168"] * 2
            and output in (f"{tokens},7168", f"1,{tokens},7168"))


def test_elementwise_full_output_shape_is_measured(perfdb_store):
    rows = select(read_rows("Add"), lambda r: _plain_add(r, 30))
    result = perfdb_store.lookup(add(30), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.details["method"] == "exact_coordinate"
    assert result.latency_us == pytest.approx(expected_measured(rows, DEFAULT_ORDER))


def test_elementwise_in_range_and_misses(perfdb_store):
    assert not [r for r in read_rows("Add") if _plain_add(r, 24)]
    inside = perfdb_store.lookup(add(24), "v0.18")
    assert inside.source is QuerySource.INTERPOLATED
    assert perfdb_store.lookup(add(100000), "v0.18").reason is Reason.OUTSIDE_CONVEX_HULL
    assert perfdb_store.lookup(add(30, "int32"), "v0.18").reason is Reason.REGIME_MISMATCH


def test_v013_mul_stays_on_generic_compute(perfdb_store):
    leaf = LeafOp.from_json({"op": "aten.mul.Tensor", "args": [
        {"shape": [1, 30, 7168], "dtype": "bfloat16"}, {"shape": [1, 30, 1], "dtype": "bfloat16"}],
        "outputs": [{"shape": [1, 30, 7168], "dtype": "bfloat16"}]})
    assert perfdb_store.lookup(leaf, "v0.13").details["path"] == "generic"
    assert perfdb_store.lookup(leaf, "v0.18").details["path"] == "elementwise"


# ---- MLA cache update -------------------------------------------------------------------


def mla_rows(cache: int, tokens: int) -> list[CsvDict]:
    return select(read_rows("ScatterNdUpdate"), lambda r: shapes(r)[:2] == [
        f"{cache},128", f"{tokens},1"])


def test_mla_base_exact_then_specialized_exact(perfdb_store):
    rows = mla_rows(226048, 4096)
    two_d = [r for r in rows if shapes(r)[2] == "4096,128"]
    assert (len(rows), len(two_d)) == (2, 1)
    base = perfdb_store.lookup(mla(4096), "v0.18")
    assert base.details["method"] == "base_exact"
    assert base.latency_us == pytest.approx(expected_measured(two_d, PROFILING_FIRST))
    path = perfdb_store.lookup(mla(4096, index=[4096]), "v0.18")
    assert (path.source, path.details["method"]) == (QuerySource.MEASURED, "exact_coordinate")
    assert path.latency_us == pytest.approx(expected_measured(rows, PROFILING_FIRST))


def test_mla_real_duplicate_rows_merge_by_median(perfdb_store):
    rows = mla_rows(131072, 16)
    assert len(rows) == 2
    result = perfdb_store.lookup(mla(16, cache=131072, index=[16]), "v0.18")
    assert result.latency_us == pytest.approx(expected_measured(rows, PROFILING_FIRST))
    assert result.details["duplicates"]["count"] == 2


def test_mla_in_range_and_misses(perfdb_store):
    inside = perfdb_store.lookup(mla(700), "v0.18")
    assert (inside.source, inside.details["method"]) == (QuerySource.INTERPOLATED, "linear_1d")
    assert perfdb_store.lookup(mla(10000), "v0.18").reason is Reason.OUTSIDE_RANGE
    assert perfdb_store.lookup(mla(700, cache=100000), "v0.18").reason is Reason.REGIME_MISMATCH
