"""What a lookup returns: a latency with its source and the evidence, or a miss with its reason."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

UPSTREAM_SOURCE_MODULE = "tensor_cast.performance_model.profiling_database.data_source"
"""Where TensorCast defines its own ``QuerySource`` (compared by name, never imported)."""


class QuerySource(str, enum.Enum):
    """Where a latency came from.

    A member also equals the member of the same name of TensorCast's own ``QuerySource``
    enum, so upstream code written as ``result.source == QuerySource.MEASURED`` (with its
    enum) works on profstore results. TensorCast is recognised by the enum's module, so
    profstore imports neither TensorCast nor torch.
    """

    MEASURED = "MEASURED"
    INTERPOLATED = "INTERPOLATED"
    PARTIAL = "PARTIAL"
    CALIBRATED = "CALIBRATED"
    """Not a lookup's: TensorCast's analytic answer times an op class's calibration, only
    under ``profstore tensorcast --calibrated-fallbacks`` (profstore.tensorcast.calibrated)."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, enum.Enum) and not isinstance(other, QuerySource):
            return (type(other).__module__ == UPSTREAM_SOURCE_MODULE
                    and type(other).__name__ == "QuerySource" and other.name == self.name)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


class Reason(str, enum.Enum):
    """Stable snake_case codes: why a lookup missed (or, for notes, why it answered 0)."""

    INVALID_DESCRIPTOR = "invalid_descriptor"
    UNMAPPED = "unmapped"
    UNKNOWN_VERSION = "unknown_version"
    CSV_NOT_FOUND = "csv_not_found"
    NO_EXACT_MATCH = "no_exact_match"
    REGIME_MISMATCH = "regime_mismatch"
    INSUFFICIENT_CANDIDATES = "insufficient_candidates"
    DEGENERATE_CANDIDATES = "degenerate_candidates"
    OUTSIDE_RANGE = "outside_range"
    OUTSIDE_CONVEX_HULL = "outside_convex_hull"
    LATENCY_INVALID = "latency_invalid"
    DIMENSION_BLOCKED = "dimension_blocked"
    TARGET_UNAVAILABLE = "target_unavailable"
    REQUIRED_FIELD_MISSING = "required_field_missing"
    UPSTREAM_LEAF_SEMANTICS_MISSING = "upstream_leaf_semantics_missing"
    EP_SIZE_NOT_CONFIGURED = "ep_size_not_configured"
    COMPUTE_SUBCATEGORY_UNKNOWN = "compute_subcategory_unknown"
    AMBIGUOUS_DUPLICATES = "ambiguous_duplicates"
    FORMAT_AMBIGUOUS = "format_ambiguous"
    INTERPOLATION_DISABLED = "interpolation_disabled"
    PARTIAL_COMPOSITE = "partial_composite"


ACROSS_KERNELS: tuple[Reason, ...] = (
    Reason.EP_SIZE_NOT_CONFIGURED,
    Reason.UPSTREAM_LEAF_SEMANTICS_MISSING,
    Reason.REQUIRED_FIELD_MISSING,
    Reason.TARGET_UNAVAILABLE,
    Reason.FORMAT_AMBIGUOUS,
    Reason.AMBIGUOUS_DUPLICATES,
    Reason.LATENCY_INVALID,
    Reason.DIMENSION_BLOCKED,
    Reason.OUTSIDE_CONVEX_HULL,
    Reason.OUTSIDE_RANGE,
    Reason.DEGENERATE_CANDIDATES,
    Reason.INSUFFICIENT_CANDIDATES,
    Reason.REGIME_MISMATCH,
    Reason.NO_EXACT_MATCH,
    Reason.INTERPOLATION_DISABLED,
    Reason.CSV_NOT_FOUND,
)
"""Which kernel's miss an op reports (primary, alternates), most telling first: what the
caller must supply, ambiguity, a corrupt latency, then a kernel whose answer needed a
dimension the policy blocks (some kernel could have answered), then bounds, candidates,
regime, file (docs/adr/0021-miss-reason-ranking.md)."""

ACROSS_AXIS_GROUPS: tuple[Reason, ...] = (
    Reason.LATENCY_INVALID,
    Reason.OUTSIDE_CONVEX_HULL,
    Reason.OUTSIDE_RANGE,
    Reason.DIMENSION_BLOCKED,
    Reason.DEGENERATE_CANDIDATES,
    Reason.INSUFFICIENT_CANDIDATES,
)
"""Which axis group's miss one kernel reports: within one regime a target beyond the
measured hull/range says more than the blocked higher dimension that would not have
reached it either (docs/adr/0021-miss-reason-ranking.md)."""


def most_specific(reasons: Iterable[Reason], order: Sequence[Reason] = ACROSS_KERNELS
                  ) -> Reason | None:
    """The first of ``reasons`` in ``order`` (unlisted reasons last; None when empty)."""
    ranked = list(reasons)
    if not ranked:
        return None
    return min(ranked, key=lambda r: order.index(r) if r in order else len(order))


@dataclass(frozen=True)
class QueryResult:
    """One answer. ``latency_us`` is None exactly when the lookup missed."""

    latency_us: float | None
    source: QuerySource | None
    confidence: float
    reason: Reason | None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def hit(self) -> bool:
        return self.latency_us is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "latency_us": self.latency_us,
            "source": self.source.value if self.source else None,
            "reason": self.reason.value if self.reason else None,
            "confidence": self.confidence,
            "details": self.details,
        }

    @classmethod
    def miss(cls, reason: Reason, **details: Any) -> QueryResult:
        return cls(None, None, 0.0, reason, dict(details))

    @classmethod
    def measured(cls, latency_us: float, confidence: float = 1.0, **details: Any) -> QueryResult:
        return cls(latency_us, QuerySource.MEASURED, confidence, None, dict(details))

    @classmethod
    def interpolated(cls, latency_us: float, confidence: float, **details: Any) -> QueryResult:
        return cls(latency_us, QuerySource.INTERPOLATED, confidence, None, dict(details))
