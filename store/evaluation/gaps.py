"""What to profile next: a workload's gaps, a profiling plan, and its expected effect.

A gap is a variant the replay answered INTERPOLATED or missed. Gaps are grouped by the
kernel, path and regime the path reads from the leaf and ranked by simulated time. A
miss has no latency, so its time is an estimate, named in ``estimate``: ``nearest``
(the nearest measured coordinate of the same regime, per-axis min-max distance),
``trace`` (the trace's own ``total_duration_us / count`` for the op: TensorCast's figure)
or ``none`` (no estimate: time 0). An INTERPOLATED gap's time is its answer.

The plan (store/evaluation/plan_points.py) brackets each target with grid points; a
point of a regime the version has no row of is marked ``opens_new_regime``. Points are
chosen greedily: misses before interpolations, then the most time per new point; a
budget caps the number of points. The effect is measured, not predicted: the planned
rows are ingested into a temporary copy of the version (store/evaluation/standin.py) as
stand-ins carrying their target's estimate, and the workload is replayed on it.
Coverage is the share of calls and of time answered MEASURED or INTERPOLATED; time
counts each remaining miss at its estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from profstore.api import Store
from profstore.evaluation.plan_points import Coordinate, ProposedPoint, Target, propose
from profstore.evaluation.standin import standin_store
from profstore.evaluation.workload import Answer, Workload, WorkloadRun, run_workload
from profstore.ingest.perfdb_writer import Row
from profstore.lookup.dispatch import Profile
from profstore.paths.base import Refusal, TargetContext
from profstore.paths.registry import path_for, selector_of
from profstore.presentation.fallback_price import PricedMiss, prices
from profstore.storage.points import kernel_points

COVERED = ("MEASURED", "INTERPOLATED")


@dataclass
class Gap:
    op: str
    index: int
    calls: int
    source: str
    reason: str | None
    kernel: str | None
    path: str | None
    regime_key: str | None
    axes: list[float]
    estimate: str
    latency_us: float
    """Per call: the answer (INTERPOLATED) or the estimate (miss)."""
    time_us: float
    not_planned: str | None = None
    """Why no point is planned (None: planned or plannable)."""
    points: list[int] = field(default_factory=list)
    nearest_latency_us: float | None = None
    """A miss's nearest measured regime's answer per call (store/lookup/nearest_regime.py)."""
    nearest_differs: dict[str, list[Any]] | None = None


@dataclass
class GapGroup:
    kernel: str
    path: str
    regime_key: str
    opens_new_regime: bool
    calls: int
    time_us: float
    share: float
    gaps: list[int]


@dataclass
class PlanPoint:
    id: int
    kernel: str
    path: str
    regime_key: str
    axes: list[float]
    role: str
    opens_new_regime: bool
    cells: dict[str, str]
    serves: list[int]


@dataclass
class Coverage:
    calls: float
    time: float
    measured_calls: float
    measured_time: float
    total_calls: int
    total_time_us: float


@dataclass
class GapReport:
    workload: str
    version: str
    budget: int | None
    gaps: list[Gap]
    groups: list[GapGroup]
    plan: list[PlanPoint]
    before: Coverage
    after: Coverage | None
    accepted_rows: dict[str, int]
    covered_after: int = 0
    fallback_prices: list[dict[str, Any]] = field(default_factory=list)
    """Per missed op: calls, the time at the gaps' estimates and the time their nearest
    measured regimes would give, the largest difference first."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Data:
    """The measured coordinates of the kernels a plan touches (one query per kernel)."""

    def __init__(self, store: Store, profile: Profile) -> None:
        self.store, self.profile = store, profile
        self.loaded: dict[str, dict[tuple[str, str], dict[Coordinate, float]]] = {}

    def regimes(self, kernel: str, path: str) -> dict[str, dict[Coordinate, float]]:
        if kernel not in self.loaded:
            found: dict[tuple[str, str], dict[Coordinate, list[float]]] = {}
            with self.store.engine.connect() as conn:
                points = kernel_points(conn, self.profile.id, kernel)
            for p in points:
                found.setdefault((p.path, p.regime_key), {}).setdefault(p.axes, []).append(
                    p.latency_us)
            self.loaded[kernel] = {k: {c: float(np.median(v)) for c, v in coords.items()}
                                   for k, coords in found.items()}
        return {key: coords for (pa, key), coords in self.loaded[kernel].items() if pa == path}

    def grids(self, kernel: str, path: str) -> dict[int, list[float]]:
        grids: dict[int, set[float]] = {}
        for coords in self.regimes(kernel, path).values():
            for c in coords:
                for j, v in enumerate(c):
                    grids.setdefault(j, set()).add(v)
        return {j: sorted(v) for j, v in grids.items()}


def target_of(answer: Answer, profile: Profile) -> Target | str:
    """The leaf's kernel, path and extraction, or why it has none."""
    leaf, result = answer.variant.leaf, answer.result
    if leaf is None or result is None:
        return "not a leaf descriptor"
    entry = profile.mapping.entry(leaf.op)
    if entry is None:
        return "unmapped: the op needs a mapping entry first"
    details = result.details
    tried = details.get("attempted_kernels") or []
    kernel = details.get("kernel_type") or (tried[0].get("kernel") if tried else None) or (
        entry.kernels[0] if entry.kernels else None)
    path = path_for(selector_of(entry), kernel) if kernel else None
    if kernel is None or path is None or entry.composite or entry.is_communication:
        return f"no interpolating path ({result.reason.value if result.reason else 'none'})"
    policy = profile.mapping.policy(kernel)
    extraction = path.target_regime(leaf, TargetContext(entry, kernel, policy))
    if isinstance(extraction, Refusal):
        return f"{extraction.reason.value}: {extraction.message}"
    return Target(leaf, entry, kernel, path, policy, extraction)


def _estimate(answer: Answer, target: Target | str, data: _Data, workload: Workload
              ) -> tuple[str, float]:
    if answer.outcome.latency_us is not None:
        return "interpolated", float(answer.outcome.latency_us)
    if isinstance(target, Target):
        coords = data.regimes(target.kernel, target.path.name).get(
            target.extraction.regime_key)
        if coords:
            return "nearest", _nearest(coords, target.extraction.axes)
    if answer.variant.op in workload.trace_us:
        return "trace", workload.trace_us[answer.variant.op]
    return "none", 0.0


def _nearest(coords: dict[Coordinate, float], axes: Sequence[float]) -> float:
    keys = sorted(coords)
    points = np.array(keys + [tuple(axes)], dtype=float)
    span = np.ptp(points, axis=0)
    scaled = (points - points.min(axis=0)) / np.where(span > 0, span, 1.0)
    distance = np.linalg.norm(scaled[:-1] - scaled[-1], axis=1)
    return coords[keys[int(np.argmin(distance))]]


def find_gaps(store: Store, run: WorkloadRun) -> tuple[list[Gap], list[Target | str], _Data]:
    profile = store.profile(run.version)
    assert profile is not None
    data = _Data(store, profile)
    gaps, targets = [], []
    for answer in run.answers:
        source = answer.outcome.source
        if source in ("MEASURED", "PARTIAL") or not answer.variant.calls:
            continue
        target = target_of(answer, profile)
        estimate, latency = _estimate(answer, target, data, run.workload)
        v, o = answer.variant, answer.outcome
        if isinstance(target, Target):
            gap = Gap(v.op, v.index, v.calls, source, o.reason, target.kernel,
                      target.path.name, target.extraction.regime_key,
                      list(target.extraction.axes), estimate, latency, latency * v.calls)
        else:
            gap = Gap(v.op, v.index, v.calls, source, o.reason, o.kernel, o.path, None, [],
                      estimate, latency, latency * v.calls, target)
        gap.nearest_latency_us = o.nearest_latency_us
        gap.nearest_differs = o.nearest_differs
        gaps.append(gap)
        targets.append(target)
    return gaps, targets, data


def gap_prices(gaps: Sequence[Gap]) -> list[dict[str, Any]]:
    """``GapReport.fallback_prices``: the missed gaps at their estimates against their
    nearest regimes (``profstore.presentation.fallback_price``)."""
    return [p.to_json() for p in prices(
        PricedMiss(g.op, g.calls, g.latency_us, g.nearest_latency_us, g.nearest_differs)
        for g in gaps if g.source == "miss")]


def group_gaps(gaps: Sequence[Gap], data: _Data) -> list[GapGroup]:
    """Plannable gaps per kernel, path and regime, by time (then calls), with shares of
    the time of every gap."""
    total = sum(g.time_us for g in gaps) or 1.0
    grouped: dict[tuple[str, str, str], list[int]] = {}
    for i, g in enumerate(gaps):
        if g.kernel and g.path and g.regime_key:
            grouped.setdefault((g.kernel, g.path, g.regime_key), []).append(i)
    groups = []
    for (kernel, path, key), members in grouped.items():
        time = sum(gaps[i].time_us for i in members)
        groups.append(GapGroup(kernel, path, key, key not in data.regimes(kernel, path),
                               sum(gaps[i].calls for i in members), time, time / total,
                               members))
    return sorted(groups, key=lambda g: (-g.time_us, -g.calls, g.kernel, g.regime_key))


@dataclass
class _Option:
    """The points one gap needs (keys into the proposal table)."""

    gap: int
    points: frozenset[tuple[str, str, str, Coordinate]]
    miss: bool
    time_us: float


def _options(gaps: list[Gap], targets: list[Target | str], store: Store, version: str,
             data: _Data) -> tuple[list[_Option], dict[tuple, tuple[ProposedPoint, bool]]]:
    profile = store.profile(version)
    assert profile is not None
    table: dict[tuple, tuple[ProposedPoint, bool]] = {}
    options = []
    for i, (gap, target) in enumerate(zip(gaps, targets)):
        if not isinstance(target, Target):
            continue
        regimes = data.regimes(target.kernel, target.path.name)
        measured = set(regimes.get(target.extraction.regime_key, {}))
        proposed = propose(target, profile.mapping, data.grids(target.kernel, target.path.name),
                           measured, gap.latency_us)
        if proposed is None:
            gap.not_planned = "no CSV row the path reads back as this target"
            continue
        keys = []
        for p in proposed:
            key = (target.kernel, target.path.name, target.extraction.regime_key, p.coordinate)
            table.setdefault(key, (p, target.extraction.regime_key not in regimes))
            keys.append(key)
        options.append(_Option(i, frozenset(keys), gap.source == "miss", gap.time_us))
    return options, table


def _value(option: _Option, have: set, pending: Sequence[_Option]
           ) -> tuple[bool, float, int]:
    """Misses first; then the gap time the option's points would cover, per new point."""
    new = len(option.points - have)
    gain = sum(p.time_us for p in pending if p.points <= have | option.points)
    return (option.miss, gain / max(new, 1), -new)


def choose(options: Sequence[_Option], budget: int | None) -> tuple[list[tuple], list[int]]:
    """Greedy: misses first, then the most gap time per point not yet chosen; an option
    whose new points exceed what is left of the budget is skipped. Returns the chosen
    point keys in order and the gaps they cover."""
    chosen: list[tuple] = []
    covered: list[int] = []
    pending = list(options)
    while pending:
        have = set(chosen)
        best = max(pending, key=lambda o: _value(o, have, pending))
        pending.remove(best)
        new = sorted(best.points - have)
        if budget is not None and len(chosen) + len(new) > budget:
            continue
        chosen += new
        covered.append(best.gap)
    return chosen, sorted(covered)


def coverage(run: WorkloadRun, estimates: dict[tuple[str, int], float]) -> Coverage:
    """Shares of calls and time answered MEASURED or INTERPOLATED; misses count at their
    estimate (per call), answers at their latency."""
    calls = time = measured_calls = measured_time = 0.0
    total_calls, total_time = 0, 0.0
    for a in run.answers:
        o = a.outcome
        per_call = o.latency_us if o.latency_us is not None else estimates.get(
            (o.op, o.index), 0.0)
        spent = per_call * o.calls
        total_calls += o.calls
        total_time += spent
        if o.source in COVERED:
            calls += o.calls
            time += spent
        if o.source == "MEASURED":
            measured_calls += o.calls
            measured_time += spent
    share = lambda v, d: v / d if d else 0.0  # noqa: E731
    return Coverage(share(calls, total_calls), share(time, total_time),
                    share(measured_calls, total_calls), share(measured_time, total_time),
                    total_calls, total_time)


def plan_gaps(store: Store, workload: Workload, version: str, *, budget: int | None = None,
              interpolation: bool = True) -> GapReport:
    """The workload's gaps, a bracketing plan within ``budget`` points, its measured effect."""
    if budget is not None and budget <= 0:
        raise ValueError(f"budget must be a positive number of shapes, got {budget}")
    run = run_workload(store, workload, version, interpolation=interpolation)
    gaps, targets, data = find_gaps(store, run)
    groups = group_gaps(gaps, data)
    options, table = _options(gaps, targets, store, version, data)
    keys, covered = choose(options, budget)
    plan = _plan_points(keys, table, options, covered)
    for point in plan:
        for g in point.serves:
            gaps[g].points.append(point.id)
    estimates = {(g.op, g.index): g.latency_us for g in gaps if g.source == "miss"}
    report = GapReport(run.report.workload, version, budget, gaps, groups, plan,
                       coverage(run, estimates), None, {},
                       fallback_prices=gap_prices(gaps))
    if plan:
        rows: dict[str, list[Row]] = {}
        for key in keys:
            rows.setdefault(key[0], []).append(table[key][0].row)
        with standin_store(store, version, rows) as (copy, accepted):
            after = run_workload(copy, workload, version, interpolation=interpolation)
        report.after, report.accepted_rows = coverage(after, estimates), accepted
        report.covered_after = sum(1 for g in gaps if _covered(after, g))
    return report


def _covered(run: WorkloadRun, gap: Gap) -> bool:
    return any(a.outcome.op == gap.op and a.outcome.index == gap.index
               and a.outcome.source in COVERED for a in run.answers)


def _plan_points(keys: Sequence[tuple], table: dict, options: Sequence[_Option],
                 covered: Sequence[int]) -> list[PlanPoint]:
    plan = []
    for n, key in enumerate(keys, start=1):
        point, new_regime = table[key]
        serves = sorted(o.gap for o in options if key in o.points and o.gap in covered)
        plan.append(PlanPoint(n, key[0], key[1], key[2], list(point.coordinate), point.role,
                              new_regime, point.row.cells(), serves))
    return plan
