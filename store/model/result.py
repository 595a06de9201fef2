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

    ``MEASURED``: a stored row at the target's coordinate; ``INTERPOLATED``: computed from
    measured rows of the target's regime; ``PARTIAL``: a composite whose sub-kernels were
    not all answered (the sum of those that were); ``CALIBRATED``: never a lookup's — under
    ``profstore tensorcast --calibrated-fallbacks`` only, TensorCast's analytic answer times
    its op class's calibration against the data.

    A member also equals the member of the same name of TensorCast's own ``QuerySource``
    enum, so upstream code written as ``result.source == QuerySource.MEASURED`` (with its
    enum) works on profstore results. TensorCast is recognised by the enum's module, so
    profstore imports neither TensorCast nor torch. A member is its value's string.

    Examples:
        >>> from profstore import QuerySource
        >>> QuerySource("MEASURED") is QuerySource.MEASURED, QuerySource.PARTIAL == "PARTIAL"
        (True, True)
        >>> [member.value for member in QuerySource]
        ['MEASURED', 'INTERPOLATED', 'PARTIAL', 'CALIBRATED']
    """

    MEASURED = "MEASURED"
    INTERPOLATED = "INTERPOLATED"
    PARTIAL = "PARTIAL"
    CALIBRATED = "CALIBRATED"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, enum.Enum) and not isinstance(other, QuerySource):
            return (type(other).__module__ == UPSTREAM_SOURCE_MODULE
                    and type(other).__name__ == "QuerySource" and other.name == self.name)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__


class Reason(str, enum.Enum):
    """Stable snake_case codes: why a lookup missed (or, for notes, why it answered 0).

    A member is its value's string, so ``result.reason == "unmapped"`` holds. The codes
    are part of the public surface: scripts and TensorCast's reports key on them. The
    order in which one is chosen when several kernels or axis groups miss is
    docs/adr/0021-miss-reason-ranking.md.

    Examples:
        >>> from profstore import Reason
        >>> Reason("outside_range") is Reason.OUTSIDE_RANGE, Reason.UNMAPPED == "unmapped"
        (True, True)
        >>> len(Reason)
        21
    """

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
    """One answer of a lookup: a latency with its source and evidence, or a miss.

    ``latency_us`` is None exactly when the lookup missed (``PARTIAL`` aside: a composite
    with some parts missed carries the answered parts' sum and the missed ones' reasons).

    Examples:
        >>> from profstore import LeafOp, QueryResult, Store
        >>> with Store.open(demo_db) as store:
        ...     result = store.lookup(LeafOp.from_json({
        ...         "op": "tensor_cast.rms_norm.default",
        ...         "args": [{"shape": [64, 7168], "dtype": "bfloat16"},
        ...                  {"shape": [7168], "dtype": "bfloat16"}, 1e-6]}), "v0.18")
        >>> result.hit, result.latency_us, result.confidence, result.reason
        (True, 5.15584, 1.0, None)
        >>> result.details["matched_rows"][0]["file"], result.details["matched_rows"][0]["line"]
        ('RmsNorm.csv', 8)
    """

    latency_us: float | None
    """The latency in microseconds; None for a miss."""
    source: QuerySource | None
    """Where the latency came from; None for a miss."""
    confidence: float
    """1.0 for a measured row, lower for an interpolation (docs/adr/0020-confidence.md),
    0.0 for a miss."""
    reason: Reason | None
    """Why the lookup missed; None for an answer."""
    details: dict[str, Any] = field(default_factory=dict)
    """The evidence: ``method``, ``kernel_type``, ``matched_rows`` (file, line, latency,
    weight), the regime and the interpolation path, or a miss's attempts."""

    @property
    def hit(self) -> bool:
        """Whether the lookup gave a latency (True for ``PARTIAL`` too).

        Examples:
            >>> from profstore import QueryResult, Reason
            >>> QueryResult.measured(5.0).hit, QueryResult.miss(Reason.UNMAPPED).hit
            (True, False)
        """
        return self.latency_us is not None

    def as_dict(self) -> dict[str, Any]:
        """The answer as JSON-ready values (what ``profstore lookup`` writes per line).

        Never raises.

        Returns:
            ``latency_us``, ``source`` and ``reason`` (their string values, or None),
            ``confidence`` and ``details``.

        Examples:
            >>> from profstore import QueryResult, Reason
            >>> QueryResult.miss(Reason.UNMAPPED, op="aten.nonexistent.default").as_dict()
            {'latency_us': None, 'source': None, 'reason': 'unmapped', 'confidence': 0.0,
             'details': {'op': 'aten.nonexistent.default'}}
        """
        return {
            "latency_us": self.latency_us,
            "source": self.source.value if self.source else None,
            "reason": self.reason.value if self.reason else None,
            "confidence": self.confidence,
            "details": self.details,
        }

    @classmethod
    def miss(cls, reason: Reason, **details: Any) -> QueryResult:
        """A miss.

        Never raises.

        Args:
            reason: why the lookup missed.
            **details: the evidence.

        Returns:
            A result without latency or source, with confidence 0.

        Examples:
            >>> from profstore import QueryResult, Reason
            >>> QueryResult.miss(Reason.OUTSIDE_RANGE, message="above 4096")
            QueryResult(latency_us=None, source=None, confidence=0.0,
                        reason=<Reason.OUTSIDE_RANGE: 'outside_range'>,
                        details={'message': 'above 4096'})
        """
        return cls(None, None, 0.0, reason, dict(details))

    @classmethod
    def measured(cls, latency_us: float, confidence: float = 1.0, **details: Any) -> QueryResult:
        """A measured answer.

        Never raises.

        Args:
            latency_us: the latency in microseconds.
            confidence: the answer's confidence.
            **details: the evidence.

        Returns:
            A result with source ``MEASURED``.

        Examples:
            >>> from profstore import QueryResult
            >>> QueryResult.measured(5.15584, method="base_exact").source.value
            'MEASURED'
        """
        return cls(latency_us, QuerySource.MEASURED, confidence, None, dict(details))

    @classmethod
    def interpolated(cls, latency_us: float, confidence: float, **details: Any) -> QueryResult:
        """An interpolated answer.

        Never raises.

        Args:
            latency_us: the latency in microseconds.
            confidence: the answer's confidence.
            **details: the evidence.

        Returns:
            A result with source ``INTERPOLATED``.

        Examples:
            >>> from profstore import QueryResult
            >>> result = QueryResult.interpolated(5.80096, 0.9, method="linear_1d")
            >>> result.source.value, result.confidence
            ('INTERPOLATED', 0.9)
        """
        return cls(latency_us, QuerySource.INTERPOLATED, confidence, None, dict(details))
