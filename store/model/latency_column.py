"""Which latency a row contributes, and from which column (DESIGN §6)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeGuard

AVERAGE = "Average Duration(us)"
PROFILING_AVERAGE = "Profiling Average Duration(us)"
DURATION = "Duration(us)"
MEDIAN = "Median Duration(us)"
CORE_ENVELOPE = "Profiling core envelope(us)"
CORE_TIME_COLUMNS = ("Profiling Average aicore_time(us)", "Profiling Average aiv_time(us)")

DEFAULT_ORDER = (AVERAGE, PROFILING_AVERAGE, DURATION, MEDIAN)
PROFILING_FIRST_ORDER = (PROFILING_AVERAGE, AVERAGE, DURATION, MEDIAN)


class LatencyPolicy(Protocol):
    """What a kernel's policy (``model.mapping.KernelPolicy``) says about latency columns."""

    @property
    def prefer_profiling_rows(self) -> bool: ...

    @property
    def core_envelope_ratio(self) -> float | None: ...


class LatencyError(ValueError):
    """No latency column of the row holds a finite positive value."""


@dataclass(frozen=True)
class LatencyChoice:
    value: float
    column: str


def column_order(policy: LatencyPolicy) -> tuple[str, ...]:
    return PROFILING_FIRST_ORDER if policy.prefer_profiling_rows else DEFAULT_ORDER


def column_rank(policy: LatencyPolicy) -> dict[str, int]:
    """Preference rank of every column a row can carry (lower is preferred)."""
    order = (*column_order(policy), CORE_ENVELOPE)
    return {column: i for i, column in enumerate(order)}


def is_valid_latency(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value) and value > 0


def select_latency(
    cells: Mapping[str, str], latencies: Mapping[str, float | None], policy: LatencyPolicy
) -> LatencyChoice:
    """The first finite positive value in the kernel's column order, then the core envelope
    rule for MIX_AIC rows whose value is a profiling duration."""
    order = [c for c in column_order(policy) if c in latencies]
    for column in order:
        value = latencies[column]
        if is_valid_latency(value):
            return _apply_core_envelope(LatencyChoice(value, column), cells, policy)
    if not order:
        raise LatencyError("no latency column (expected one of " + ", ".join(DEFAULT_ORDER) + ")")
    seen = ", ".join(f"{c}={cells.get(c, '')!r}" for c in order)
    raise LatencyError(f"no finite positive latency: {seen}")


def _apply_core_envelope(
    choice: LatencyChoice, cells: Mapping[str, str], policy: LatencyPolicy
) -> LatencyChoice:
    ratio = policy.core_envelope_ratio
    if ratio is None or choice.column != PROFILING_AVERAGE:
        return choice
    if cells.get("Accelerator Core", "").strip() != "MIX_AIC":
        return choice
    envelope = max((_float(cells.get(c)) for c in CORE_TIME_COLUMNS), default=0.0)
    if envelope > 0 and choice.value > ratio * envelope:
        return LatencyChoice(envelope, CORE_ENVELOPE)
    return choice


def _float(text: str | None) -> float:
    try:
        value = float(text) if text is not None else 0.0
    except ValueError:
        return 0.0
    return value if math.isfinite(value) else 0.0
