"""The data source a TensorCast run asks: ``ProfstoreDataSource`` with its time and
answers counted (``run_stats``), and the miss it last gave kept for the fallback count."""

from __future__ import annotations

import json
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from profstore.model.leaf import LeafOp
from profstore.tensorcast.collections_inside import watcher
from profstore.tensorcast.data_source import ProfstoreDataSource
from profstore.tensorcast.ledger import Kind, PricedOp, kind_of, op_class
from profstore.tensorcast.run_stats import Fallback, ProcessStats
from profstore.tensorcast.tensorcast_result import TensorCastResult


@dataclass(frozen=True)
class Miss:
    """The last lookup's miss: its leaf (None when the op did not convert) and reasons."""

    leaf: LeafOp | None
    op: str
    reason: str
    label: str
    nearest: dict[str, Any] | None = None
    """The first nearest regime that answers (``details["nearest_regimes"]``), if any."""


class MeteredDataSource:
    """Answers like ``inner``; counts into ``stats``."""

    def __init__(self, inner: ProfstoreDataSource, stats: ProcessStats) -> None:
        self.inner = inner
        self.stats = stats
        self.last_miss: Miss | None = None
        self.collections = watcher()

    @property
    def last_miss_reason(self) -> str | None:
        return self.inner.last_miss_reason

    @property
    def last_miss_details(self) -> dict[str, Any] | None:
        return self.inner.last_miss_details

    def lookup(self, op_invoke_info: Any) -> TensorCastResult | None:
        collections = self.collections
        collected = collections.seconds
        collections.running = True
        start = perf_counter()
        try:
            answer = self.inner.lookup(op_invoke_info)
        finally:
            collections.running = False
        seconds = perf_counter() - start
        self.stats.lookup_collection_seconds += collections.seconds - collected
        result = self.inner.last_result
        if answer is not None:
            self.stats.answered(answer.source.value if answer.source else "unknown", seconds)
            self.last_miss = None
            stated = result.details.get("regime_equivalences") if result is not None else None
            if stated:
                self.stats.equivalences[_op_of(op_invoke_info) + ": " + _spelled(stated)] += 1
            return answer
        reason = result.reason.value if result is not None and result.reason else "unknown"
        label = self.inner.last_miss_reason or reason
        self.stats.missed(reason, label, seconds)
        nearest = next((n for n in (result.details.get("nearest_regimes") or [])
                        if n.get("latency_us") is not None), None) if result else None
        self.last_miss = Miss(self.inner.last_leaf, _op_of(op_invoke_info), reason, label,
                              nearest)
        return None

    def fallback(self, analytic_us: float) -> Fallback | None:
        """The ``Fallback`` of the miss just priced by the analytic model (None after a
        hit, or for an op that never became a leaf)."""
        miss, self.last_miss = self.last_miss, None
        if miss is None or miss.leaf is None:
            return None
        leaf = miss.leaf.to_json()
        key = json.dumps(leaf, sort_keys=True)
        found = self.stats.fallbacks.get(key)
        if found is None:
            near = miss.nearest or {}
            found = self.stats.fallbacks[key] = Fallback(
                miss.op, leaf, miss.reason, miss.label, analytic_us,
                nearest_us=near.get("latency_us"), differs=near.get("differs"))
        return found

    def priced(self, op: str, latency_us: float, analytic_us: float) -> PricedOp:
        """The ledger entry of the op just priced: how the last lookup answered it, the
        latency TensorCast used and TensorCast's analytic latency for it."""
        result = self.inner.last_result
        kind = kind_of(result)
        reason = None
        if kind is Kind.FALLBACK:
            reason = result.reason.value if result is not None and result.reason else "unknown"
        return PricedOp(op, op_class(op, result), kind, latency_us, analytic_us, reason)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _op_of(op_invoke_info: Any) -> str:
    return str(getattr(op_invoke_info, "func", "?")).removeprefix("torch.ops.")


def _spelled(equivalences: list[dict[str, Any]]) -> str:
    return ", ".join(f"{e['field']} {e['target']} → {e['used']}" for e in equivalences)
