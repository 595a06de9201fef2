"""End to end on ../shared/perfdb v0.18: LightningIndexer and SparseFlashAttention leaves.

Expected latencies come from this file's own reading of the CSVs: the complete rows of
one regime (heads, request count, phase, cache, topk), keyed by coordinate, with the
column the v0.18 policy selects (LightningIndexer prefers the profiling average).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict

import pytest
from profstore.model.result import QuerySource, Reason

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.specialized_leaves import li_leaf, sfa_leaf

pytestmark = requires_perfdb

V18 = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / "vllm0.18.0_torch2.9.0_cann8.5"
AVERAGE, PROFILING = "Average Duration(us)", "Profiling Average Duration(us)"


def first_valid(row: dict[str, str], columns: tuple[str, ...]) -> float:
    for column in columns:
        try:
            value = float(row[column])
        except ValueError:
            continue
        if math.isfinite(value) and value > 0:
            return value
    raise AssertionError(f"no valid latency in {columns}")


def regime_rows(kernel: str, heads: int, requests: int, phase: str, blocks: int,
                columns: tuple[str, ...]) -> dict[int, list[tuple[float, str]]]:
    """tokens -> [(latency, kv lengths)] of the complete rows of one regime."""
    found: dict[int, list[tuple[float, str]]] = defaultdict(list)
    with open(V18 / f"{kernel}.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            query, cache = (p.split(",") for p in row["Input Shapes"].strip('"').split(";")[:2])
            if (row["Runtime metadata_completeness"] == "complete"
                    and (int(query[1]), row["Runtime batch_size"], row["Runtime phase"],
                         int(cache[0])) == (heads, str(requests), phase, blocks)):
                found[int(query[0])].append((first_valid(row, columns),
                                             row["Runtime actual_seq_lengths_kv_values"]))
    return found


def between(rows: dict[int, list[tuple[float, str]]], lo: int, hi: int, x: int) -> float:
    (a, _), (b, _) = rows[lo][0], rows[hi][0]
    assert len(rows[lo]) == len(rows[hi]) == 1
    return a + (b - a) * (x - lo) / (hi - lo)


@pytest.fixture(scope="module")
def li_prefill() -> dict[int, list[tuple[float, str]]]:
    return regime_rows("LightningIndexer", 32, 1, "prefill", 1766, (PROFILING, AVERAGE))


@pytest.fixture(scope="module")
def sfa_prefill() -> dict[int, list[tuple[float, str]]]:
    return regime_rows("SparseFlashAttention", 16, 1, "prefill", 1766, (AVERAGE, PROFILING))


def test_li_measured_coordinate(perfdb_store, li_prefill):
    [(expected, _)] = li_prefill[1024]
    result = perfdb_store.lookup(li_leaf(1024), "v0.18")
    assert (result.latency_us, result.source) == (expected, QuerySource.MEASURED)
    assert result.details["latency_column"] == PROFILING
    assert result.details["exact_owner"] == "path"


def test_li_interpolated_coordinate(perfdb_store, li_prefill):
    result = perfdb_store.lookup(li_leaf(1000), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(between(li_prefill, 768, 1024, 1000))
    assert result.details["method"] == "linear_1d"


def test_li_decode_needs_kv_lengths_to_pick_a_row(perfdb_store):
    rows = regime_rows("LightningIndexer", 32, 8, "decode", 1766, (PROFILING, AVERAGE))[8]
    [expected] = [latency for latency, kv in rows if kv == ",".join(["4096"] * 8)]
    picked = perfdb_store.lookup(li_leaf(8, requests=8, phase="decode", kv=[4096] * 8), "v0.18")
    assert (picked.latency_us, picked.source) == (expected, QuerySource.MEASURED)
    unpicked = perfdb_store.lookup(li_leaf(8, requests=8, phase="decode"), "v0.18")
    assert unpicked.reason is Reason.AMBIGUOUS_DUPLICATES


def test_li_misses(perfdb_store):
    assert perfdb_store.lookup(li_leaf(99999), "v0.18").reason is Reason.OUTSIDE_CONVEX_HULL
    foreign = perfdb_store.lookup(li_leaf(1024, heads=48), "v0.18")
    assert foreign.reason is Reason.REGIME_MISMATCH
    attempt = foreign.details["attempted_kernels"][0]
    assert (attempt["kernel_points"], attempt["kernel_regimes"]) == (1340, 33)
    assert sum(attempt["path_refusals"].values()) == 7


def test_sfa_measured_coordinate(perfdb_store, sfa_prefill):
    [(expected, _)] = sfa_prefill[512]
    result = perfdb_store.lookup(sfa_leaf(512), "v0.18")
    assert (result.latency_us, result.source) == (expected, QuerySource.MEASURED)
    assert result.details["target_regime"]["sparse_phase"] == "prefill"


def test_sfa_interpolated_coordinate(perfdb_store, sfa_prefill):
    result = perfdb_store.lookup(sfa_leaf(600), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(between(sfa_prefill, 512, 768, 600))


def test_sfa_duplicate_coordinate_is_protected(perfdb_store, sfa_prefill):
    # two rows measured at 1024 tokens disagree: never a median, and never a vertex
    assert len(sfa_prefill[1024]) == 2
    assert perfdb_store.lookup(sfa_leaf(1024), "v0.18").reason is Reason.AMBIGUOUS_DUPLICATES
    result = perfdb_store.lookup(sfa_leaf(1000), "v0.18")
    assert result.latency_us == pytest.approx(between(sfa_prefill, 768, 1536, 1000))
    assert result.details["interpolation_path"][0]["ambiguous_excluded"] == 2


def test_sfa_misses(perfdb_store, sfa_prefill):
    above = perfdb_store.lookup(sfa_leaf(99999), "v0.18")
    assert above.reason is Reason.OUTSIDE_RANGE
    assert above.details["last_geometry"]["message"].endswith(
        f"above the largest measured tokens {max(sfa_prefill)}")
    assert perfdb_store.lookup(sfa_leaf(1024, heads=12), "v0.18").reason is Reason.REGIME_MISMATCH
    bare = perfdb_store.lookup(sfa_leaf(1024, context={}), "v0.18")
    assert bare.reason is Reason.UPSTREAM_LEAF_SEMANTICS_MISSING
