"""What changed between two versions: latencies at shared coordinates, regimes and kernels
present in one only, mapping entries, and (given workloads) the simulated totals.

A coordinate is what the store itself matches: kernel, path, regime and axes (and the
semantic discriminator where a path has one), duplicates merged by median. Its ratio is
``to / from``. A CSV row feeds every path that reads it, so one measurement can be a
coordinate of two paths; the per-kernel figures count each pair of measurements once.
Spread is p10–p90 of the ratios; the worst coordinates are those farthest from 1 in log.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from profstore.api import Store
from profstore.evaluation.workload import Workload, run_workload
from profstore.model.mapping import MappingEntry
from profstore.paths.registry import selector_of
from profstore.storage.points import version_points

MAPPING_FIELDS = ("kernel_type", "alternate_kernel_types", "selector", "zero_cost")
WORST = 3
TOP_OPS = 5

Key = tuple[str, str, str, tuple[float, ...], str]
"""(kernel, path, regime_key, axes, semantic)."""


@dataclass
class Measured:
    latency_us: float
    samples: tuple[int, ...]


@dataclass
class Ratios:
    coordinates: int
    median: float | None
    p10: float | None
    p90: float | None
    worst: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RegimeDiff:
    kernel: str
    path: str
    regime_key: str
    presence: str
    """``both``, ``from`` or ``to`` (the version that has the regime)."""
    ratios: Ratios | None


@dataclass
class KernelDiff:
    kernel: str
    presence: str
    regimes_both: int
    regimes_only_from: int
    regimes_only_to: int
    ratios: Ratios | None
    log_ratios: list[float] = field(default_factory=list, repr=False)


@dataclass
class MappingChange:
    op: str
    change: str
    """``added``, ``removed`` or the field that changed."""
    before: Any = None
    after: Any = None


@dataclass
class WorkloadDiff:
    workload: str
    total_from_us: float
    total_to_us: float
    answered_from: int
    answered_to: int
    common_variants: int
    """Variants answered in both versions; the common totals sum only those."""
    common_from_us: float
    common_to_us: float
    ops: list[dict[str, Any]]


@dataclass
class DiffReport:
    from_version: str
    to_version: str
    kernels: list[KernelDiff]
    regimes: list[RegimeDiff]
    mapping_changes: list[MappingChange]
    workloads: list[WorkloadDiff]
    overall: Ratios

    def headline(self) -> str:
        both = [k for k in self.kernels if k.presence == "both"]
        only_from = sum(1 for k in self.kernels if k.presence == "from")
        only_to = sum(1 for k in self.kernels if k.presence == "to")
        o = self.overall
        ratio = ("no shared coordinates" if o.median is None else
                 f"{o.coordinates} shared coordinates, latency ratio median {o.median:.3f} "
                 f"(p10 {o.p10:.3f}, p90 {o.p90:.3f})")
        text = (f"{self.from_version} -> {self.to_version}: {len(both)} kernels in both, "
                f"{only_from} only in {self.from_version}, {only_to} only in "
                f"{self.to_version}; {ratio}; {len(self.mapping_changes)} mapping changes")
        for w in self.workloads:
            change = (w.total_to_us / w.total_from_us - 1) if w.total_from_us else math.nan
            same = (w.common_to_us / w.common_from_us - 1) if w.common_from_us else math.nan
            text += (f"; {w.workload}: {w.total_from_us:.1f} -> {w.total_to_us:.1f} us "
                     f"({change:+.1%}; {same:+.1%} over the {w.common_variants} shapes "
                     "answered in both)")
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for k in data["kernels"]:
            k.pop("log_ratios")
        data["headline"] = self.headline()
        return data


def coordinates(store: Store, version: str) -> dict[Key, Measured]:
    """Every measured coordinate of a version, duplicates merged by median."""
    profile = store.profile(version)
    if profile is None:
        raise ValueError(f"unknown version {version!r}; ingested: "
                         f"{', '.join(store.versions()) or 'none'}")
    rows: dict[Key, list[tuple[float, int]]] = {}
    with store.engine.connect() as conn:
        points = version_points(conn, profile.id)
    for p in points:
        rows.setdefault((p.kernel, p.path, p.regime_key, p.axes, p.semantic_key or ""),
                        []).append((float(p.latency_us), int(p.sample_id)))
    return {k: Measured(float(np.median([v for v, _ in r])), tuple(sorted(s for _, s in r)))
            for k, r in rows.items()}


def ratio_stats(pairs: Sequence[tuple[Key, float, float]]) -> Ratios:
    """Ratios ``to / from`` of (key, from, to) triples; from <= 0 is left out."""
    usable = [(k, a, b) for k, a, b in pairs if a > 0 and b > 0]
    if not usable:
        return Ratios(0, None, None, None)
    ratios = np.array([b / a for _, a, b in usable])
    p10, median, p90 = np.percentile(ratios, [10, 50, 90])
    order = np.argsort(-np.abs(np.log(ratios)), kind="stable")[:WORST]
    worst = [{"kernel": usable[i][0][0], "path": usable[i][0][1], "axes": list(usable[i][0][3]),
              "from_us": usable[i][1], "to_us": usable[i][2], "ratio": float(ratios[i])}
             for i in order]
    return Ratios(len(usable), float(median), float(p10), float(p90), worst)


def compare_coordinates(before: dict[Key, Measured], after: dict[Key, Measured]
                        ) -> tuple[list[KernelDiff], list[RegimeDiff], Ratios]:
    regimes: dict[tuple[str, str, str], dict[str, list]] = {}
    for side, data in (("from", before), ("to", after)):
        for key in data:
            regimes.setdefault(key[:3], {"from": [], "to": []})[side].append(key)
    regime_diffs: list[RegimeDiff] = []
    per_kernel: dict[str, dict[str, Any]] = {}
    seen: set[tuple] = set()
    for rkey in sorted(regimes):
        sides = regimes[rkey]
        shared = sorted(set(sides["from"]) & set(sides["to"]))
        presence = "both" if sides["from"] and sides["to"] else (
            "from" if sides["from"] else "to")
        pairs = [(k, before[k].latency_us, after[k].latency_us) for k in shared]
        regime_diffs.append(RegimeDiff(*rkey, presence, ratio_stats(pairs) if shared else None))
        bucket = per_kernel.setdefault(rkey[0], {"pairs": [], "both": 0, "from": 0, "to": 0})
        bucket[presence] += 1
        for k, a, b in pairs:
            measurement = (before[k].samples, after[k].samples)
            if measurement not in seen:
                seen.add(measurement)
                bucket["pairs"].append((k, a, b))
    kernels = []
    for kernel, c in sorted(per_kernel.items()):
        presence = "both" if c["both"] or (c["from"] and c["to"]) else (
            "from" if c["from"] else "to")
        stats = ratio_stats(c["pairs"]) if c["pairs"] else None
        logs = [math.log(y / x) for _, x, y in c["pairs"] if x > 0 and y > 0]
        kernels.append(KernelDiff(kernel, presence, c["both"], c["from"], c["to"], stats, logs))
    every = [p for c in per_kernel.values() for p in c["pairs"]]
    return kernels, regime_diffs, ratio_stats(every)


def _field(entry: MappingEntry, name: str) -> Any:
    value = selector_of(entry) if name == "selector" else getattr(entry, name)
    return list(value) if isinstance(value, tuple) else value


def mapping_changes(store_a: Store, v1: str, store_b: Store, v2: str) -> list[MappingChange]:
    a, b = store_a.profile(v1), store_b.profile(v2)
    assert a is not None and b is not None
    changes = []
    for op in sorted(set(a.mapping.entries) | set(b.mapping.entries)):
        old, new = a.mapping.entries.get(op), b.mapping.entries.get(op)
        if old is None or new is None:
            changes.append(MappingChange(op, "added" if old is None else "removed"))
            continue
        changes += [MappingChange(op, name, _field(old, name), _field(new, name))
                    for name in MAPPING_FIELDS if _field(old, name) != _field(new, name)]
    return changes


def workload_diff(store_a: Store, v1: str, store_b: Store, v2: str,
                  workload: Workload) -> WorkloadDiff:
    run_a, run_b = run_workload(store_a, workload, v1), run_workload(store_b, workload, v2)
    before, after = run_a.report, run_b.report
    common = [(a.time_us, b.time_us) for a, b in zip(run_a.answers, run_b.answers)
              if a.outcome.latency_us is not None and b.outcome.latency_us is not None]
    old = {r.op: r.latency_us for r in before.ops}
    new = {r.op: r.latency_us for r in after.ops}
    moved = sorted(((op, old.get(op, 0.0), new.get(op, 0.0)) for op in set(old) | set(new)),
                   key=lambda m: (-abs(m[2] - m[1]), m[0]))
    ops = [{"op": op, "from_us": x, "to_us": y, "delta_us": y - x}
           for op, x, y in moved[:TOP_OPS] if y != x]
    answered = lambda r: sum(v for k, v in r.source_by_calls.items() if k != "miss")  # noqa: E731
    return WorkloadDiff(before.workload, before.total_latency_us, after.total_latency_us,
                        answered(before), answered(after), len(common),
                        sum(a for a, _ in common), sum(b for _, b in common), ops)


def diff_versions(store_a: Store, v1: str, store_b: Store, v2: str,
                  workloads: Sequence[Workload] = ()) -> DiffReport:
    before, after = coordinates(store_a, v1), coordinates(store_b, v2)
    kernels, regimes, overall = compare_coordinates(before, after)
    return DiffReport(v1, v2, kernels, regimes, mapping_changes(store_a, v1, store_b, v2),
                      [workload_diff(store_a, v1, store_b, v2, w) for w in workloads], overall)
