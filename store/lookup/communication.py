"""Communication leaves: exact on (message bytes, devices, tier), else a local alpha-beta
fit on the two measured sizes that bracket the target, never beyond the measured range.
The base owns communication; the wrapper never interpolates it (RFC §1.3, §3.1).

Why local: one alpha-beta line over 1 KB … 512 MB cannot follow the small-message floor,
the protocol switches and the chunk steps (all_reduce of 160 KB on 8 devices: the global
fit says 17.8 µs where the measured neighbours read 22.2 and 24.1 µs). Leave-one-out over
the corpus (``profstore holdout``, communication section) picked the bracketing pair over
least squares on the two or three nearest sizes on each side: the pair has the lower p90
(the nearest-k fits smooth the floor but bend across the switches);
docs/adr/0046-communication-bracketing-pair.md has the figures.
"""

from __future__ import annotations

import statistics
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from profstore.model.clock_cache import ClockCache
from profstore.model.dtypes import element_size
from profstore.model.leaf import LeafOp, TensorSpec
from profstore.model.result import QueryResult, Reason
from profstore.storage.comm_samples import CommPoint, collective_points
from profstore.storage.handles import Connection

ALPHA_BETA_CONFIDENCE = 0.8


def message_bytes(leaf: LeafOp, devices: int, collective: str,
                  payload: TensorSpec | None = None) -> float | None:
    """Bytes of ``payload`` (default: the first tensor argument), per rank for reduce-scatter."""
    tensors = leaf.tensor_inputs()
    if payload is None and not tensors:
        return None
    first: TensorSpec = payload or tensors[0]
    size = first.numel * element_size(first.dtype)
    if "reducescatter" in collective.lower().replace("_", ""):
        return size / devices
    return size


def device_count(leaf: LeafOp) -> int | None:
    """Length of the ``rank_group`` argument (the last list of ints: earlier ones may be
    split sizes), else ``context.num_devices``."""
    for arg in reversed(leaf.args):
        if isinstance(arg, tuple) and arg and all(isinstance(v, int) for v in arg):
            return len(arg)
    return leaf.context.num_devices


class Connectable(Protocol):
    """What the lookup needs of an engine: an Engine, or the per-thread snapshot proxy
    (store/storage/snapshot.py)."""

    def connect(self) -> AbstractContextManager[Connection]: ...


class CommunicationLookup:
    def __init__(self, engine: Connectable) -> None:
        self.engine = engine
        self._cache: ClockCache[tuple[int, str, int], list[CommPoint] | None] = ClockCache(256)

    def lookup(self, leaf: LeafOp, kernels: tuple[str, ...], profile_id: int | None,
               payload: TensorSpec | None = None) -> QueryResult:
        """``payload`` is the communicated tensor when it is not the first argument (a fused
        matmul + all-reduce composite reduces its output)."""
        if profile_id is None:
            return QueryResult.miss(Reason.CSV_NOT_FOUND,
                                    message="the version names no ingested HCCL data")
        devices = device_count(leaf)
        if devices is None:
            return QueryResult.miss(
                Reason.REQUIRED_FIELD_MISSING,
                message="communication needs a rank_group argument or context.num_devices")
        attempts = []
        for kernel in kernels:
            result = self._kernel(leaf, kernel, devices, profile_id, payload)
            if result.hit:
                return result
            assert result.reason is not None, "a miss names its reason"
            attempts.append({"kernel": kernel, "reason": result.reason.value,
                             **result.details})
        reason = Reason(attempts[-1]["reason"]) if attempts else Reason.UNMAPPED
        return QueryResult.miss(reason, attempted_kernels=attempts)

    def _kernel(self, leaf: LeafOp, collective: str, devices: int, profile_id: int,
                payload: TensorSpec | None = None) -> QueryResult:
        points = self._points(profile_id, collective, devices)
        if points is None:
            return QueryResult.miss(Reason.CSV_NOT_FOUND, message=f"no {collective}.csv")
        size = message_bytes(leaf, devices, collective, payload)
        if size is None:
            return QueryResult.miss(Reason.TARGET_UNAVAILABLE, message="no tensor argument")
        target = {"message_bytes": size, "num_devices": devices,
                  "topology_tier": leaf.context.topology_tier}
        if not points:
            return QueryResult.miss(Reason.REGIME_MISMATCH, target=target,
                                    message=f"no {collective} rows for {devices} devices")
        tiers = sorted({p.tier for p in points if p.tier is not None})
        tier = leaf.context.topology_tier
        if tier is None and len(tiers) > 1:
            return QueryResult.miss(Reason.AMBIGUOUS_DUPLICATES, target=target, tiers=tiers,
                                    message="several topology tiers measured; set "
                                            "context.topology_tier")
        if tier is not None:
            points = [p for p in points if p.tier == tier]
            if not points:
                return QueryResult.miss(Reason.REGIME_MISMATCH, target=target, tiers=tiers)
        return _answer(points, size, collective, target)

    def _points(self, profile_id: int, collective: str, devices: int) -> list[CommPoint] | None:
        key = (profile_id, collective, devices)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        points = collective_points(self.engine, profile_id, collective, devices)
        self._cache.put(key, points)
        return points


@dataclass(frozen=True)
class SizeCurve:
    """One (collective, devices, tier)'s measured latency per message size, ascending;
    rows of the same size merged by median."""

    sizes: np.ndarray
    latency: np.ndarray
    lines: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, points: list[CommPoint]) -> SizeCurve:
        by_size: dict[float, list[CommPoint]] = {}
        for p in points:
            by_size.setdefault(float(p.message_bytes), []).append(p)
        sizes = sorted(by_size)
        return cls(np.array(sizes, dtype=float),
                   np.array([statistics.median(p.latency_us for p in by_size[s])
                             for s in sizes], dtype=float),
                   tuple(tuple(p.line_no for p in by_size[s]) for s in sizes))


@dataclass(frozen=True)
class AlphaBeta:
    """``latency = alpha + beta · bytes`` through the measured sizes at ``lower``/``upper``."""

    alpha_us: float
    beta_us_per_byte: float
    lower: int
    upper: int

    def at(self, size: float) -> float:
        return self.alpha_us + self.beta_us_per_byte * size


def bracketing_fit(curve: SizeCurve, size: float) -> AlphaBeta | None:
    """The alpha-beta line through the two measured sizes around ``size`` (strictly inside
    the measured range; None at or beyond either end)."""
    upper = int(np.searchsorted(curve.sizes, size))
    if upper == 0 or upper >= len(curve.sizes) or curve.sizes[upper] == size:
        return None
    lower = upper - 1
    (x0, x1), (y0, y1) = curve.sizes[[lower, upper]], curve.latency[[lower, upper]]
    beta = float((y1 - y0) / (x1 - x0))
    return AlphaBeta(float(y0 - beta * x0), beta, lower, upper)


def global_fit(curve: SizeCurve) -> tuple[float, float]:
    """(alpha, beta) of one least-squares line over every size: the former rule, kept as
    the hold-out baseline."""
    beta, alpha = np.polyfit(curve.sizes, curve.latency, 1)
    return float(alpha), float(beta)


def _answer(points: list[CommPoint], size: float, collective: str, target: dict) -> QueryResult:
    base: dict[str, Any] = {"kernel_type": collective, "target": target,
                            "candidate_count": len(points)}
    same = [p for p in points if p.message_bytes == size]
    if same:
        return QueryResult.measured(
            statistics.median(p.latency_us for p in same), method="exact", **base,
            matched_rows=[{"file": f"{collective}.csv", "line": p.line_no,
                           "latency_us": p.latency_us} for p in same])
    curve = SizeCurve.of(points)
    lo, hi = float(curve.sizes[0]), float(curve.sizes[-1])
    fit = bracketing_fit(curve, size)
    if fit is None:
        return QueryResult.miss(Reason.OUTSIDE_RANGE, **base, boundary={"min": lo, "max": hi},
                                message=f"{size:.0f} bytes outside the measured range "
                                        f"[{lo:.0f}, {hi:.0f}]")
    value = fit.at(size)
    if not np.isfinite(value) or value <= 0:
        return QueryResult.miss(Reason.LATENCY_INVALID, **base, alpha_us=fit.alpha_us,
                                beta_us_per_byte=fit.beta_us_per_byte)
    rows = [{"file": f"{collective}.csv", "line": line, "message_bytes": float(curve.sizes[i]),
             "latency_us": float(curve.latency[i])}
            for i in (fit.lower, fit.upper) for line in curve.lines[i][:1]]
    return QueryResult.interpolated(value, ALPHA_BETA_CONFIDENCE, method="alpha_beta_local",
                                    **base, alpha_us=fit.alpha_us,
                                    beta_us_per_byte=fit.beta_us_per_byte,
                                    matched_rows=rows, boundary={"min": lo, "max": hi})
