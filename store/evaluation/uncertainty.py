"""How sure a simulated total is: per-answer error models and a Monte Carlo interval.

An INTERPOLATED answer's error is drawn from the leave-one-out hold-out of its path and
kernel (store/evaluation/holdout.py): the signed relative errors ``predicted / truth - 1``
of the held-out coordinates of the same regime and interpolation dimension when there are
at least ``MIN_POINTS`` of them, else of the kernel at that dimension, else of the kernel,
else of the whole path. A MEASURED answer whose coordinate has duplicate rows draws one of
its rows (the spread of its duplicates); one backed by a single row draws from the
measurement noise its kernel's duplicates show (store/evaluation/repeatability.py); a
zero-cost entry or a PARTIAL answer draws nothing. Misses are not part of the total and
not part of the interval.

The truth of one answer is ``answer / (1 + r)`` for an interpolation error ``r``, the
row's latency for a duplicate and ``answer · (1 + d)`` for a duplicate deviation ``d``.
Two bounds: **independent** (every variant draws its own error; all calls of one
variant share it — they are the same shape) and **fully
correlated** (one uniform quantile per draw for every variant: each answer errs the same
way at the same rank of its own distribution: the k-th lowest truth of each). Both
report p10 / p50 / p90 of the total.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from profstore.api import Store
from profstore.evaluation.holdout import HoldoutPoint, known_profile, run_holdout
from profstore.evaluation.repeatability import duplicate_deviations
from profstore.evaluation.replay import ZERO_METHODS
from profstore.evaluation.workload import Answer
from profstore.model.result import QueryResult
from profstore.paths.base import regime_key
from profstore.storage.catalog import profile_by_id
from profstore.storage.points import kernel_paths

MIN_POINTS = 5
"""Hold-out errors a level needs before it is used (else the next, wider level)."""
DRAWS = 4000
CACHE_SCHEMA = 1


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "profstore" / "errors"


@dataclass
class GroupErrors:
    """The signed relative hold-out errors of one path and kernel, by regime and dim."""

    path: str
    kernel: str
    by_regime_dim: dict[str, list[float]] = field(default_factory=dict)
    """Key ``"<dim>|<regime_key>"``."""

    def add(self, point: HoldoutPoint) -> None:
        if point.predicted_us is None or not point.truth_us:
            return
        key = f"{point.interpolation_dim}|{point.regime_key}"
        self.by_regime_dim.setdefault(key, []).append(point.predicted_us / point.truth_us - 1)

    def pool(self, regime: str, dim: int | None) -> tuple[str, list[float]]:
        """The narrowest level with enough errors, and its errors ('' when none)."""
        same = self.by_regime_dim.get(f"{dim}|{regime}", [])
        if len(same) >= MIN_POINTS:
            return "regime", same
        at_dim = [e for k, v in self.by_regime_dim.items() if k.split("|", 1)[0] == str(dim)
                  for e in v]
        if len(at_dim) >= MIN_POINTS:
            return "kernel_dim", at_dim
        every = [e for v in self.by_regime_dim.values() for e in v]
        return ("kernel", every) if every else ("", [])


class ErrorModel:
    """Hold-out errors per (path, kernel) of one version, computed on first use and kept
    in memory and, when ``cache_dir`` is set, in a JSON file per version and database
    state (a re-ingest changes the content hash, so a stale file is never read)."""

    def __init__(self, store: Store, version: str, cache_dir: Path | None = None) -> None:
        known_profile(store, version)
        self.store, self.version = store, version
        self.cache_file = None if cache_dir is None else Path(cache_dir) / (
            f"errors-{_state_digest(store, version)}.json")
        self.groups: dict[tuple[str, str], GroupErrors] = self._read_cache()
        self._paths: dict[str, list[float]] = {}
        self._repeat: dict[str, list[float]] | None = None

    def repeatability(self, kernel: str) -> tuple[str, list[float]]:
        """The duplicate deviations of the kernel (``kernel_duplicates``) when it has at
        least MIN_POINTS, else of the whole version (``version_duplicates``)."""
        if self._repeat is None:
            self._repeat = duplicate_deviations(self.store, self.version)
        own = self._repeat.get(kernel, [])
        if len(own) >= MIN_POINTS:
            return "kernel_duplicates", own
        every = [d for v in self._repeat.values() for d in v]
        return ("version_duplicates", every) if every else ("", [])

    def group(self, path: str, kernel: str) -> GroupErrors:
        key = (path, kernel)
        if key not in self.groups:
            found = GroupErrors(path, kernel)
            for point in run_holdout(self.store, self.version, kernel=kernel, path=path).points:
                found.add(point)
            self.groups[key] = found
            self._write_cache()
        return self.groups[key]

    def pool(self, path: str, kernel: str, regime: str, dim: int | None
             ) -> tuple[str, list[float]]:
        level, errors = self.group(path, kernel).pool(regime, dim)
        if errors:
            return level, errors
        if path not in self._paths:
            self._paths[path] = [e for g in self._path_groups(path)
                                 for v in g.by_regime_dim.values() for e in v]
        return ("path", self._paths[path]) if self._paths[path] else ("none", [])

    def _path_groups(self, path: str) -> list[GroupErrors]:
        kernels = {k for k, p in self._kernels_of_path() if p == path}
        return [self.group(path, k) for k in sorted(kernels)]

    def _kernels_of_path(self) -> list[tuple[str, str]]:
        profile = known_profile(self.store, self.version)
        with self.store.engine.connect() as conn:
            return [(found.kernel, found.path) for found in kernel_paths(conn, profile.id)]

    def _read_cache(self) -> dict[tuple[str, str], GroupErrors]:
        if self.cache_file is None or not self.cache_file.exists():
            return {}
        try:
            data = json.loads(self.cache_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        if data.get("schema") != CACHE_SCHEMA:
            return {}
        return {(g["path"], g["kernel"]): GroupErrors(**g) for g in data["groups"]}

    def _write_cache(self) -> None:
        if self.cache_file is None:
            return
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        body = {"schema": CACHE_SCHEMA, "version": self.version,
                "groups": [asdict(g) for g in self.groups.values()]}
        temporary = self.cache_file.with_suffix(f".{os.getpid()}.tmp")  # workers race
        temporary.write_text(json.dumps(body), encoding="utf-8")
        temporary.replace(self.cache_file)


def _state_digest(store: Store, version: str) -> str:
    """The database URL and the version's content hash, hashed (a cache file name)."""
    profile = known_profile(store, version)
    with store.engine.connect() as conn:
        content = profile_by_id(conn, profile.id).content_hash
    url = store.engine.url.render_as_string(hide_password=True)
    return hashlib.sha256(f"{url}|{profile.alias}|{content}".encode()).hexdigest()[:24]


@dataclass
class OpError:
    """The error distribution of one answered variant."""

    op: str
    index: int
    calls: int
    latency_us: float
    source: str
    kind: str
    """``interpolation`` (truth = answer / (1 + r)), ``duplicates`` (truth = one of the
    answer's rows), ``repeatability`` (truth = answer · (1 + d)) or ``none``."""
    level: str
    values: list[float]

    def truths(self) -> np.ndarray:
        if self.kind == "interpolation":
            return self.latency_us / (1.0 + np.asarray(self.values, dtype=float))
        if self.kind == "duplicates":
            return np.asarray(self.values, dtype=float)
        if self.kind == "repeatability":
            return self.latency_us * (1.0 + np.asarray(self.values, dtype=float))
        return np.asarray([self.latency_us], dtype=float)


def op_errors(answers: Iterable[Answer], model: ErrorModel) -> list[OpError]:
    """The error distribution of every answered variant (misses left out)."""
    found = []
    for a in answers:
        r = a.result
        if r is None or r.latency_us is None or not a.variant.calls:
            continue
        source = r.source.value if r.source is not None else "miss"
        kind, level, values = answer_error(r, model)
        found.append(OpError(a.variant.op, a.variant.index, a.variant.calls, r.latency_us,
                             source, kind, level, values))
    return found


def answer_error(r: QueryResult, model: ErrorModel) -> tuple[str, str, list[float]]:
    """One answer's error distribution: its kind (``OpError.kind``), level and values."""
    source = r.source.value if r.source is not None else "miss"
    if source == "INTERPOLATED" and r.details.get("path"):
        level, values = model.pool(r.details["path"], r.details.get("kernel_type", ""),
                                   regime_key(r.details.get("target_regime") or {}),
                                   r.details.get("interpolation_dim"))
        return ("interpolation" if values else "none"), level, values
    if source == "MEASURED" and r.latency_us is not None and r.latency_us > 0:
        rows = [m["latency_us"] for m in r.details.get("matched_rows") or []
                if isinstance(m.get("latency_us"), (int, float))]
        if len(rows) > 1:
            return "duplicates", "coordinate", rows
        if r.details.get("method") not in ZERO_METHODS:
            level, values = model.repeatability(r.details.get("kernel_type", ""))
            return ("repeatability" if values else "none"), level, values
    return "none", "", []


@dataclass
class Bounds:
    p10: float
    p50: float
    p90: float


@dataclass
class Interval:
    """The answered total with its Monte Carlo bounds and the ops that dominate them."""

    total_us: float
    independent: Bounds
    correlated: Bounds
    draws: int
    seed: int
    answered_variants: int
    uncertain_variants: int
    levels: dict[str, int]
    dominant: list[dict[str, Any]]

    def contains(self, value: float, bound: str = "independent") -> bool:
        b = self.independent if bound == "independent" else self.correlated
        return b.p10 <= value <= b.p90

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def interval(errors: Sequence[OpError], draws: int = DRAWS, seed: int = 0,
             top: int = 5) -> Interval:
    """p10 / p50 / p90 of the total under independent and fully-correlated errors."""
    if draws <= 0:
        raise ValueError(f"draws must be positive, got {draws}")
    rng = np.random.default_rng(seed)
    independent = np.zeros(draws)
    correlated = np.zeros(draws)
    quantile = rng.random(draws)
    spreads = []
    for e in errors:
        truths = e.truths()
        drawn = truths[rng.integers(0, len(truths), draws)] * e.calls
        independent += drawn
        ordered = np.sort(truths)
        index = np.minimum((quantile * len(ordered)).astype(int), len(ordered) - 1)
        correlated += ordered[index] * e.calls
        spreads.append((float(np.var(drawn)), e))
    variance = sum(v for v, _ in spreads) or 1.0
    dominant = [{"op": e.op, "index": e.index, "calls": e.calls, "latency_us": e.latency_us,
                 "source": e.source, "level": e.level, "errors": len(e.values),
                 "variance_share": v / variance}
                for v, e in sorted(spreads, key=lambda s: -s[0])[:top] if v > 0]
    levels: dict[str, int] = {}
    for e in errors:
        levels[e.level or "none"] = levels.get(e.level or "none", 0) + 1
    return Interval(sum(e.latency_us * e.calls for e in errors), _bounds(independent),
                    _bounds(correlated), draws, seed, len(errors),
                    sum(1 for e in errors if e.kind != "none"), levels, dominant)


def _bounds(totals: np.ndarray) -> Bounds:
    p10, p50, p90 = np.percentile(totals, [10, 50, 90])
    return Bounds(float(p10), float(p50), float(p90))


def describe_levels(levels: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(levels.items()))
