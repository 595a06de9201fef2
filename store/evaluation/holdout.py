"""Leave-one-out evaluation of the interpolating paths, without touching the database.

For every measured coordinate of every regime (``sample_point`` rows of one version) the
coordinate is hidden — every row of that regime at that coordinate, so the hold-out
never reads a duplicate twin — and the store is asked for it through
``PathRunner.answer``, the same exact-coordinate + low-dimension-first code a real
lookup runs after ``target_regime``. The truth is what the store answers for the same
coordinate with nothing hidden (the exact coordinate, duplicates merged by median).

Coordinates that are vertices of the convex hull of their regime (1-D: the smallest
and largest; in the path's transformed axes) cannot be answered without extrapolation;
they are counted apart. The baseline copies the nearest other coordinate of the same
regime (per-axis min-max normalised distance; ties go to the first in sorted order).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from profstore.api import Store
from profstore.evaluation.holdout_comm import CommStats, communication_holdout
from profstore.geometry.simplex import affine_rank
from profstore.lookup.dispatch import Profile
from profstore.lookup.duplicate_rows import merge_coordinate
from profstore.model.latency_column import column_rank
from profstore.model.mapping import KernelPolicy, MappingEntry, VersionMapping
from profstore.paths.base import Extraction, OperatorPath
from profstore.paths.registry import ALL_PATHS, path_for, selector_of
from profstore.storage.points import point_samples
from profstore.storage.regime_slice import MeasuredRow

Coordinate = tuple[float, ...]
COMMUNICATION = "communication"
"""``--path`` value that selects the communication hold-out alone."""
ONLY_COORDINATE = "only_coordinate"
"""Reason of a point that is its regime's single coordinate: hiding it empties the regime."""


@dataclass
class HoldoutPoint:
    """One measured coordinate (and semantic discriminator) of one regime, held out."""

    kernel: str
    path: str
    regime_key: str
    axes: list[float]
    semantic: str | None
    rows: int
    boundary: bool
    truth_us: float | None = None
    predicted_us: float | None = None
    reason: str | None = None
    method: str | None = None
    interpolation_dim: int | None = None
    ape: float | None = None
    nn_us: float | None = None
    nn_axes: list[float] | None = None
    nn_ape: float | None = None


@dataclass
class GroupStats:
    """Hold-out figures of one path and kernel (kernel ``*``: the whole path)."""

    path: str
    kernel: str
    axis_names: list[str]
    regimes: int = 0
    points: int = 0
    boundary: int = 0
    boundary_answered: int = 0
    no_truth: int = 0
    eligible: int = 0
    answered: int = 0
    coverage: float | None = None
    ape: dict[str, float | None] = field(default_factory=dict)
    nn_ape: dict[str, float | None] = field(default_factory=dict)
    methods: dict[str, int] = field(default_factory=dict)
    miss_reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class HoldoutReport:
    version: str
    filters: dict[str, Any]
    groups: list[GroupStats]
    paths: list[GroupStats]
    points: list[HoldoutPoint]
    skipped_paths: list[str]
    communication: list[CommStats] = field(default_factory=list)
    """Leave-one-out per message size of the communication rule (store/evaluation/
    holdout_comm.py); empty when a kernel or path filter excludes communication."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def error_stats(errors: Sequence[float]) -> dict[str, float | None]:
    """Median, p90 (linear between order statistics) and max of absolute % errors."""
    if not errors:
        return {"median": None, "p90": None, "max": None}
    values = np.asarray(errors, dtype=float)
    return {"median": float(np.median(values)), "p90": float(np.percentile(values, 90)),
            "max": float(values.max())}


def ape(predicted: float, truth: float) -> float:
    return abs(predicted - truth) / truth * 100.0


def transformed(coords: np.ndarray, path: OperatorPath, policy: KernelPolicy) -> np.ndarray:
    out = np.array(coords, dtype=float, copy=True)
    for j, fn in enumerate(path.axis_transforms(policy)[: out.shape[1]]):
        if fn is not None:
            out[:, j] = [fn(v) for v in out[:, j]]
    return out


def hull_vertices(coords: np.ndarray) -> set[int]:
    """Indices of the distinct coordinates that are vertices of their convex hull, computed
    inside the coordinates' own affine hull (a flat 3-D set is a 2-D hull)."""
    n = coords.shape[0]
    if n <= 2:
        return set(range(n))
    span = np.ptp(coords, axis=0)
    varying = coords[:, span > 0] / span[span > 0]
    rank = affine_rank(varying) if varying.shape[1] else 0
    if rank == 0:
        return set(range(n))
    centred = varying - varying.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    projected = centred @ vt[:rank].T
    if rank == 1:
        line = projected[:, 0]
        return {int(np.argmin(line)), int(np.argmax(line))}
    from scipy.spatial import ConvexHull, QhullError  # only here: the CLI imports this module

    try:
        return {int(i) for i in ConvexHull(projected).vertices}
    except QhullError:
        return set(range(n))


def nearest(coords: np.ndarray, index: int, candidates: Iterable[int]) -> int | None:
    """The candidate nearest to ``coords[index]`` (min-max normalised axes; first on ties)."""
    pool = sorted(candidates)
    if not pool:
        return None
    span = np.ptp(coords, axis=0)
    scaled = (coords - coords.min(axis=0)) / np.where(span > 0, span, 1.0)
    distances = np.linalg.norm(scaled[pool] - scaled[index], axis=1)
    return pool[int(np.argmin(distances))]


@dataclass
class _Regime:
    kernel: str
    path: str
    key: str
    units: dict[tuple[Coordinate, str | None], int] = field(default_factory=dict)
    samples: dict[Coordinate, list[int]] = field(default_factory=dict)


def load_regimes(store: Store, profile_id: int, kernel: str | None, path: str | None,
                 regime_key: str | None) -> list[_Regime]:
    regimes: dict[tuple[str, str, str], _Regime] = {}
    with store.engine.connect() as conn:
        points = point_samples(conn, profile_id, kernel, path, regime_key)
    for p in points:
        regime = regimes.setdefault((p.kernel, p.path, p.regime_key),
                                    _Regime(p.kernel, p.path, p.regime_key))
        regime.samples.setdefault(p.axes, []).append(p.sample_id)
        unit = (p.axes, p.semantic_key)
        regime.units[unit] = regime.units.get(unit, 0) + 1
    return [regimes[k] for k in sorted(regimes)]


@dataclass
class _Shape:
    """A regime's distinct coordinates, in the path's transformed axes, and its hull."""

    path: OperatorPath
    policy: KernelPolicy
    spec: dict[str, Any]
    coords: list[Coordinate]
    index: dict[Coordinate, int]
    geometry: np.ndarray
    vertices: set[int]

    @classmethod
    def of(cls, regime: _Regime, path: OperatorPath, policy: KernelPolicy) -> _Shape:
        coords = sorted(regime.samples)
        array = np.array(coords, dtype=float).reshape(len(coords), -1)
        geometry = transformed(array, path, policy)
        return cls(path, policy, json.loads(regime.key), coords,
                   {c: i for i, c in enumerate(coords)}, geometry, hull_vertices(geometry))


def known_profile(store: Store, version: str) -> Profile:
    """The version's profile; ValueError for a version that was never ingested."""
    profile = store.profile(version)
    if profile is None:
        raise ValueError(f"unknown version {version!r}")
    return profile


def entry_for(mapping: VersionMapping, kernel: str, path: str) -> MappingEntry | None:
    """The first mapping entry that routes ``kernel`` to ``path`` (for the details)."""
    for entry in mapping.entries_for_kernel(kernel):
        chosen = path_for(selector_of(entry), kernel)
        if chosen is not None and chosen.name == path:
            return entry
    return None


class HoldoutRunner:
    def __init__(self, store: Store, version: str) -> None:
        self.store, self.profile = store, known_profile(store, version)
        self.runner = store.dispatcher.runner
        self.paths = {p.name: p for p in ALL_PATHS}

    def regime(self, regime: _Regime) -> list[HoldoutPoint]:
        """Hold out every unit of one regime, in sorted order."""
        shape = _Shape.of(regime, self.paths[regime.path],
                          self.profile.mapping.policy(regime.kernel))
        units = sorted(regime.units, key=lambda u: (u[0], u[1] or ""))
        truth = self._truth(regime, shape.policy, units)
        return [self._point(regime, shape, truth, unit) for unit in units]

    def _point(self, regime: _Regime, shape: _Shape, truth: dict,
               unit: tuple[Coordinate, str | None]) -> HoldoutPoint:
        axes, semantic = unit
        i = shape.index[axes]
        point = HoldoutPoint(regime.kernel, regime.path, regime.key, list(axes), semantic,
                             regime.units[unit], i in shape.vertices, truth.get(unit))
        if point.truth_us is None:
            return point
        if len(shape.coords) == 1:
            point.reason = ONLY_COORDINATE
            return point
        entry = entry_for(self.profile.mapping, regime.kernel, regime.path)
        attempt = self.runner.answer(shape.path, regime.kernel, entry, shape.policy,
                                     self.profile.id, Extraction(shape.spec, axes, semantic),
                                     frozenset(regime.samples[axes]))
        self._score(point, attempt)
        others = [shape.index[c] for c, s in truth if s == semantic and c != axes]
        near = nearest(shape.geometry, i, others)
        if near is not None:
            point.nn_axes = list(shape.coords[near])
            point.nn_us = truth[(shape.coords[near], semantic)]
            point.nn_ape = ape(point.nn_us, point.truth_us)
        return point

    def _truth(self, regime: _Regime, policy: KernelPolicy,
               units: Sequence[tuple[Coordinate, str | None]]) -> dict:
        """The measured value of every unit: its rows merged exactly as the exact-coordinate
        lookup merges them (preferred latency column, median, ambiguity refused)."""
        rows = self.runner.queries.regime_slice(self.profile.id, regime.kernel, regime.path,
                                                regime.key).rows
        by_axes: dict[Coordinate, list[MeasuredRow]] = {}
        for row in rows:
            by_axes.setdefault(row.axes, []).append(row)
        truth = {}
        for axes, semantic in units:
            outcome = merge_coordinate(by_axes.get(axes, []), column_rank(policy),
                                       unique_required=policy.require_semantic_unique,
                                       semantic=semantic)
            if outcome.merged is not None:
                truth[(axes, semantic)] = outcome.merged.latency_us
        return truth

    @staticmethod
    def _score(point: HoldoutPoint, attempt: Any) -> None:
        result = attempt.result
        if result is None:
            point.reason = attempt.reason.value if attempt.reason else "no_answer"
            return
        point.predicted_us = result.latency_us
        point.method = result.details.get("method")
        point.interpolation_dim = result.details.get("interpolation_dim")
        assert point.truth_us is not None, "only a point with a truth is scored"
        point.ape = ape(result.latency_us, point.truth_us)


def summarise(points: Sequence[HoldoutPoint], regimes: Sequence[_Regime], path: str,
              kernel: str) -> GroupStats:
    found = next((p for p in ALL_PATHS if p.name == path), None)
    stats = GroupStats(path, kernel, list(found.axis_names) if found else [])
    stats.regimes = len(regimes)
    stats.points = len(points)
    methods: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    errors: list[float] = []
    nn_errors: list[float] = []
    for p in points:
        if p.truth_us is None:
            stats.no_truth += 1
        elif p.boundary:
            stats.boundary += 1
            stats.boundary_answered += p.predicted_us is not None
        else:
            stats.eligible += 1
            if p.predicted_us is None:
                reasons[p.reason or "no_answer"] += 1
                continue
            stats.answered += 1
            methods[p.method or "unknown"] += 1
            if p.ape is not None:  # set with every prediction
                errors.append(p.ape)
            if p.nn_ape is not None:
                nn_errors.append(p.nn_ape)
    stats.coverage = stats.answered / stats.eligible if stats.eligible else None
    stats.ape, stats.nn_ape = error_stats(errors), error_stats(nn_errors)
    stats.methods = dict(sorted(methods.items()))
    stats.miss_reasons = dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    return stats


def run_holdout(store: Store, version: str, *, kernel: str | None = None,
                path: str | None = None, regime_key: str | None = None,
                progress: Any = None) -> HoldoutReport:
    """Hold out every measured coordinate of the selected regimes and score the answers."""
    runner = HoldoutRunner(store, version)
    regimes = load_regimes(store, runner.profile.id, kernel, path, regime_key)
    skipped = sorted({r.path for r in regimes if r.path not in runner.paths})
    regimes = [r for r in regimes if r.path in runner.paths]
    points: list[HoldoutPoint] = []
    by_group: dict[tuple[str, str], list[_Regime]] = {}
    for done, regime in enumerate(regimes, start=1):
        points += runner.regime(regime)
        by_group.setdefault((regime.path, regime.kernel), []).append(regime)
        if progress is not None:
            progress(done, len(regimes))
    groups = [summarise([p for p in points if (p.path, p.kernel) == key], rs, *key)
              for key, rs in sorted(by_group.items())]
    paths = [summarise([p for p in points if p.path == name],
                       [r for r in regimes if r.path == name], name, "*")
             for name in sorted({r.path for r in regimes})]
    filters = {"kernel": kernel, "path": path, "regime_key": regime_key}
    wants_comm = path in (None, COMMUNICATION) and regime_key is None and (
        kernel is None or kernel.startswith("hcom_"))
    comm = communication_holdout(store, version, error_stats) if wants_comm else []
    if kernel is not None:
        comm = [c for c in comm if c.collective == kernel]
    return HoldoutReport(version, filters, groups, paths, points, skipped, comm)
