"""How repeatable a measurement is: the spread of a version's duplicate rows.

Rows of one kernel with the same input and output cells, extra columns and latency
column measure the same call; each row's deviation from their median (``row / median -
1``) is one sample of the measurement noise. A MEASURED answer backed by a single row
draws from its kernel's deviations (the version's when the kernel has too few).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from profstore.api import Store
from profstore.evaluation.holdout import known_profile
from profstore.storage.samples import duplicate_groups


def duplicate_deviations(store: Store, version: str) -> dict[str, list[float]]:
    """Per kernel, ``row / median - 1`` of every row of a coordinate measured twice or more."""
    profile = known_profile(store, version)
    with store.engine.connect() as conn:
        groups = duplicate_groups(conn, profile.id)
    found: dict[str, list[float]] = {}
    for group in groups:
        found.setdefault(group.kernel, []).extend(_deviations(group.latencies_us))
    return found


def _deviations(latencies: Iterable[float]) -> list[float]:
    values = np.asarray(list(latencies), dtype=float)
    median = float(np.median(values))
    return [float(v / median - 1) for v in values] if median > 0 else []
