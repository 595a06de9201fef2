"""The corpus's v0.18 LightningIndexer and SparseFlashAttention CSVs read by the tests' own
parsing: the complete rows of one regime (heads, request count, phase, cache, topk), keyed
by coordinate, with the column the v0.18 policy selects (LightningIndexer prefers the
profiling average)."""

from __future__ import annotations

import csv
import math
from collections import defaultdict

from tests.support.paths import PERFDB

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
