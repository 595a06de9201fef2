"""The corpus's v0.18 MatMul, QuantBatchMatmulV3 and DynamicQuant CSVs read by the tests'
own parsing: rows whose replay column ``Average Duration(us)`` is valid, at coordinates no
other row shares (never the store's answers)."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable

from tests.support.paths import PERFDB

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
