"""Time by source: how much of a run's simulated time each kind of answer priced.

A model's simulated time is the sum over its distinct ops of calls × the latency TensorCast
used for one call (``ledger``). The split adds that up by kind — measured, interpolated,
PARTIAL composites, zero-cost, calibrated fallbacks, and TensorCast's analytic fallbacks by
miss reason — for the whole run (every model of every process), per parallel
configuration, and per op class. Sums are exactly rounded (``math.fsum``): the models
arrive from worker processes in no fixed order, and the shares must add up the same way
every time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from profstore.tensorcast.ledger import Kind, ModelLedger, PricedOp

Side = Callable[[PricedOp], "tuple[str, float] | None"]
"""How one op counts: its bucket (a kind, or ``fallback:<reason>``) and the latency of one
call; None leaves it out."""

BUCKETS = ("measured", "interpolated", "extrapolated", "partial", "zero_cost", "calibrated")
"""The buckets every split names (``extrapolated`` only upstream's source fills)."""


def profstore_side(op: PricedOp) -> tuple[str, float]:
    """What the run simulated: profstore's answer, else TensorCast's analytic fallback."""
    if op.kind is Kind.FALLBACK:
        return f"fallback:{op.reason or 'unknown'}", op.latency_us
    return op.kind.value, op.latency_us


def upstream_side(op: PricedOp) -> tuple[str, float] | None:
    """What upstream's CSV data source would have simulated (``--compare``): its answer,
    else the analytic time of the same op; None when it was not asked."""
    if op.upstream_kind is None:
        return None
    if op.upstream_kind == "fallback":
        return f"fallback:{op.upstream_reason or 'unknown'}", op.analytic_us
    return op.upstream_kind, float(op.upstream_us or 0.0)


@dataclass(frozen=True)
class TimeSplit:
    """Simulated microseconds per bucket, fallbacks by miss reason, and the op calls each
    bucket priced."""

    parts: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    @property
    def total_us(self) -> float:
        return math.fsum(self.parts.values())

    def fallback_us(self) -> dict[str, float]:
        return {key.split(":", 1)[1]: value for key, value in sorted(self.parts.items())
                if key.startswith("fallback:")}

    def share(self, bucket: str) -> float:
        """The bucket's share of the total (``fallback`` sums every reason)."""
        total = self.total_us
        if total <= 0:
            return 0.0
        if bucket == "fallback":
            return math.fsum(self.fallback_us().values()) / total
        return self.parts.get(bucket, 0.0) / total

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {f"{b}_us": self.parts.get(b, 0.0) for b in BUCKETS}
        data["fallback_us"] = self.fallback_us()
        data["total_us"] = self.total_us
        data["shares"] = {b: self.share(b) for b in (*BUCKETS, "fallback")}
        data["calls"] = dict(self.calls)
        return data


def split(ops: Iterable[PricedOp], side: Side = profstore_side) -> TimeSplit:
    """The time of these ops by bucket (calls × latency of one call)."""
    terms: dict[str, list[float]] = defaultdict(list)
    calls: dict[str, int] = defaultdict(int)
    for op in ops:
        counted = side(op)
        if counted is not None:
            terms[counted[0]].append(op.calls * counted[1])
            calls[counted[0]] += op.calls
    return TimeSplit({bucket: math.fsum(values) for bucket, values in sorted(terms.items())},
                     dict(sorted(calls.items())))


def all_ops(models: Iterable[ModelLedger]) -> list[PricedOp]:
    return [op for model in models for op in model.ops.values()]


def config_label(config: dict[str, int]) -> str:
    """A configuration as upstream labels one (``TP=4 | PP=1 | …``), sizes it leaves at 0
    (no MTP) left out."""
    return " | ".join(f"{key}={value}" for key, value in config.items()
                      if value or key != "MTP")


def by_configuration(models: Iterable[ModelLedger], side: Side = profstore_side
                     ) -> dict[str, TimeSplit]:
    """One split per parallel configuration (its models merged: every batch size the
    search simulated with it)."""
    grouped: dict[str, list[PricedOp]] = defaultdict(list)
    for model in models:
        grouped[config_label(model.config)].extend(model.ops.values())
    return {label: split(ops, side) for label, ops in sorted(grouped.items())}


def by_class(models: Iterable[ModelLedger]) -> dict[str, TimeSplit]:
    """One split per op class (kernel, or op where none is mapped), the most time first."""
    grouped: dict[str, list[PricedOp]] = defaultdict(list)
    for op in all_ops(models):
        grouped[op.op_class].append(op)
    splits = {name: split(ops) for name, ops in grouped.items()}
    return dict(sorted(splits.items(), key=lambda item: (-item[1].total_us, item[0])))
