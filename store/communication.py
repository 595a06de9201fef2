"""Communication leaves: exact on (message bytes, devices, tier), else an alpha-beta fit
inside the measured byte range. The base owns communication; the wrapper never
interpolates it (RFC §1.3, §3.1)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
from profstore import schema as t
from profstore.candidates import LRU
from profstore.dtypes import element_size
from profstore.leaf import LeafOp, TensorSpec
from profstore.result import QueryResult, Reason
from sqlalchemy import Engine, select

ALPHA_BETA_CONFIDENCE = 0.8


@dataclass(frozen=True)
class CommPoint:
    message_bytes: float
    latency_us: float
    tier: str | None
    line_no: int


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


class CommunicationLookup:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._cache = LRU(256)

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
        c = t.comm_sample.c
        with self.engine.connect() as conn:
            present = conn.execute(select(c.id).where(
                c.profile_id == profile_id, c.collective == collective).limit(1)).first()
            rows = conn.execute(
                select(c.message_bytes, c.latency_us, c.topology_tier, c.line_no).where(
                    c.profile_id == profile_id, c.collective == collective,
                    c.num_devices == devices)
            ).all()
        points = None if present is None else [CommPoint(*r) for r in rows]
        self._cache.put(key, points)
        return points


def _answer(points: list[CommPoint], size: float, collective: str, target: dict) -> QueryResult:
    base = {"kernel_type": collective, "target": target, "candidate_count": len(points)}
    same = [p for p in points if p.message_bytes == size]
    if same:
        return QueryResult.measured(
            statistics.median(p.latency_us for p in same), method="exact", **base,
            matched_rows=[{"file": f"{collective}.csv", "line": p.line_no,
                           "latency_us": p.latency_us} for p in same])
    sizes = np.array([p.message_bytes for p in points])
    lo, hi = float(sizes.min()), float(sizes.max())
    if not lo <= size <= hi or len(set(sizes.tolist())) < 2:
        return QueryResult.miss(Reason.OUTSIDE_RANGE, **base, boundary={"min": lo, "max": hi},
                                message=f"{size:.0f} bytes outside the measured range "
                                        f"[{lo:.0f}, {hi:.0f}]")
    latency = np.array([p.latency_us for p in points])
    beta, alpha = np.polyfit(sizes, latency, 1)
    value = float(alpha + beta * size)
    if not np.isfinite(value) or value <= 0:
        return QueryResult.miss(Reason.LATENCY_INVALID, **base, alpha_us=float(alpha),
                                beta_us_per_byte=float(beta))
    return QueryResult.interpolated(value, ALPHA_BETA_CONFIDENCE, method="alpha_beta", **base,
                                    alpha_us=float(alpha), beta_us_per_byte=float(beta),
                                    boundary={"min": lo, "max": hi})
