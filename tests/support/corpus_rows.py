"""The corpus's v0.18 CSVs read by the tests' own parsing (DFC, elementwise, MLA cache
update end to end): the expected measured latency is the median of the rows whose selected
column is the most preferred one present (the latency values are synthetic; only the
format and the quirks are real)."""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Callable

from tests.support.paths import PERFDB

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
