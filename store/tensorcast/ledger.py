"""What each model of a TensorCast run priced, op by op.

Every model (one per ``ModelRunner``: one parallel configuration) keeps, per distinct op
(upstream's ``cache_key``), how its time was priced — measured, interpolated, a PARTIAL
composite, zero-cost, a calibrated fallback or TensorCast's analytic fallback with the miss
reason — the latency TensorCast used for one call, TensorCast's own analytic latency for
the same call (its empirical model prices every op both ways) and the number of calls.
Time by source (``time_split``) and the analytic model's check (``analytic_check``) are
read from these records.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from profstore.model.result import QueryResult
from profstore.tensorcast.miss_codes import attempted_kernels


class Kind(str, enum.Enum):
    """How one op's time was priced."""

    MEASURED = "measured"
    INTERPOLATED = "interpolated"
    PARTIAL = "partial"
    ZERO_COST = "zero_cost"
    CALIBRATED = "calibrated"
    FALLBACK = "fallback"


ANSWERED = (Kind.MEASURED, Kind.INTERPOLATED)
"""The kinds whose latency comes from profiling rows (the analytic check reads these)."""


@dataclass
class PricedOp:
    """One distinct op of one model. ``reason``: the miss reason of a fallback (or of the
    miss a calibrated answer replaced). With ``--compare``, ``upstream_kind`` is how
    upstream's CSV data source answered the same op (a ``Kind`` value, ``extrapolated``,
    or ``fallback`` with ``upstream_reason``) and ``upstream_us`` its latency."""

    op: str
    op_class: str
    kind: Kind
    latency_us: float
    analytic_us: float
    reason: str | None = None
    calls: int = 0
    upstream_kind: str | None = None
    upstream_us: float | None = None
    upstream_reason: str | None = None

    @property
    def time_us(self) -> float:
        return self.latency_us * self.calls

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PricedOp:
        return cls(**{**data, "kind": Kind(data["kind"])})


@dataclass
class ModelLedger:
    """The ops one model priced; ``config``: its parallel sizes (upstream's label keys)."""

    config: dict[str, int]
    ops: dict[str, PricedOp] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config, "ops": {k: v.to_json() for k, v in self.ops.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelLedger:
        return cls(dict(data["config"]),
                   {k: PricedOp.from_json(v) for k, v in data["ops"].items()})


def config_of(user_input: Any) -> dict[str, int]:
    """A model's parallel configuration, by upstream's label keys."""
    parallel = user_input.get_parallel_config()
    names = {"TP": "tensor_parallel_size", "PP": "pipeline_parallel_size",
             "DP": "data_parallel_size", "EP": "expert_parallel_size",
             "MOE-TP": "moe_tensor_parallel_size", "MOE-DP": "moe_data_parallel_size"}
    found = {key: int(getattr(parallel, name, 0) or 0) for key, name in names.items()}
    found["MTP"] = int(getattr(user_input, "num_mtp_tokens", 0) or 0)
    return found


def op_class(op: str, result: QueryResult | None) -> str:
    """The op's class: the kernel that answered it, else the first kernel its mapping
    tried, else the op itself (unmapped, or it never became a leaf)."""
    if result is None:
        return op
    details = result.details
    kernel = details.get("kernel_type")
    if kernel:
        return str(kernel)
    tried = attempted_kernels(details)
    return tried[0] if tried else op


def kind_of(result: QueryResult | None) -> Kind:
    """How profstore's last answer prices the op (None or a miss: the analytic fallback)."""
    if result is None or result.source is None:
        return Kind.FALLBACK
    if result.details.get("zero_cost"):
        return Kind.ZERO_COST
    return Kind(result.source.value.lower())
