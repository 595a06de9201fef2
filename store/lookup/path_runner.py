"""Run one capability path for one kernel: exact coordinate, then low-dimension-first
interpolation inside the regime (RFC §3.3, §3.4; DESIGN §5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from profstore.geometry.outcome import Diagnostic, GeometryResult
from profstore.geometry.simplex import TriangulationCache, interpolate_simplex
from profstore.lookup.attempt import Attempt
from profstore.lookup.duplicate_rows import merge_coordinate
from profstore.lookup.prepared_candidates import Candidates, Prepared
from profstore.model.clock_cache import ClockCache
from profstore.model.leaf import LeafOp
from profstore.model.mapping import KernelPolicy, MappingEntry
from profstore.model.result import (
    ACROSS_AXIS_GROUPS,
    QueryResult,
    QuerySource,
    Reason,
    most_specific,
)
from profstore.paths.base import AxisTransform, Extraction, OperatorPath, Refusal, TargetContext
from profstore.storage.queries import CandidateQueries
from profstore.storage.regime_slice import RegimeSlice

if TYPE_CHECKING:
    from profstore.lookup.nearest_regime import Nearest, RegimeAnswer
    from profstore.lookup.regime_policy import RegimePolicy

CONFIDENCE_BY_DIM = {1: 0.9, 2: 0.8, 3: 0.7}
DIAGNOSTIC_REASON = {
    Diagnostic.INSUFFICIENT: Reason.INSUFFICIENT_CANDIDATES,
    Diagnostic.DEGENERATE: Reason.DEGENERATE_CANDIDATES,
    Diagnostic.OUTSIDE_RANGE: Reason.OUTSIDE_RANGE,
    Diagnostic.OUTSIDE_HULL: Reason.OUTSIDE_CONVEX_HULL,
    Diagnostic.LATENCY_GUARD: Reason.LATENCY_INVALID,
}


@dataclass
class PathRequest:
    """Everything one path attempt needs besides the database."""

    path: OperatorPath
    leaf: LeafOp | None
    ctx: TargetContext
    profile_id: int
    interpolate: bool = True
    exclude: frozenset[int] = frozenset()
    regime_policy: RegimePolicy | None = None
    """Stated regime equivalences (``profstore.lookup.regime_policy``): read where the target's
    own regime has no point."""


@dataclass(frozen=True)
class GroupAnswer:
    """What one axis group interpolated: the method, its details and the latency."""

    method: str
    details: dict[str, Any]
    latency_us: float


def _interpolated(prepared: Prepared, geometry: GeometryResult, dim: int) -> GroupAnswer:
    details = {
        "latency_column": prepared.column,
        "candidate_count": len(prepared.points),
        "boundary": geometry.boundary,
        "matched_rows": [prepared.vertex_row(i, w)
                         for i, w in zip(geometry.vertices, geometry.weights)],
    }
    method = "linear_1d" if dim == 1 else f"simplex_{dim}d"
    assert geometry.value is not None, "only an ok geometry is turned into an answer"
    return GroupAnswer(method, details, float(geometry.value))


class PathRunner:
    def __init__(self, queries: CandidateQueries, triangulations: TriangulationCache,
                 prepared_cache_size: int = 2048) -> None:
        self.queries = queries
        self.triangulations = triangulations
        self._prepared: ClockCache[tuple[Any, ...], Candidates] = ClockCache(
            prepared_cache_size)
        self._regime_answers: ClockCache[tuple[Any, ...], RegimeAnswer] = ClockCache(4096)
        self._nearest: ClockCache[tuple[int, str, str, str], Nearest] = ClockCache(4096)

    def run(self, req: PathRequest, target: Extraction | Refusal | None = None) -> Attempt:
        """The request's leaf looked up on its path; ``target``: its extraction, when the
        caller has made it already (format inference extracts each assignment it tries)."""
        kernel = req.ctx.kernel_type
        if not self.queries.kernel_present(req.profile_id, kernel):
            return _fail(Attempt(kernel), Reason.CSV_NOT_FOUND, f"no {kernel}.csv in this version")
        if req.leaf is None:
            raise ValueError("PathRunner.run needs the request's leaf (answer() takes none)")
        if target is None:
            target = req.path.target_regime(req.leaf, req.ctx)
        if isinstance(target, Refusal):
            attempt = Attempt(kernel)
            attempt.notes["target_fields"] = dict(target.fields)
            return _fail(attempt, target.reason, target.message)
        return self._answer(req, target)

    def answer(self, path: OperatorPath, kernel: str, entry: MappingEntry | None,
               policy: KernelPolicy, profile_id: int, target: Extraction,
               exclude: frozenset[int] = frozenset(), *, interpolate: bool = True) -> Attempt:
        """Exact coordinate, then low-dimension-first interpolation, for an already extracted
        target: everything ``run`` does after ``target_regime``. Hold-out evaluation calls it
        with a stored point's own extraction and that point's rows in ``exclude``; ``entry``
        only feeds the success details and may be None there."""
        entry = entry or MappingEntry(op="")  # no entry: the details name no query mode
        return self._answer(PathRequest(path, None, TargetContext(entry, kernel, policy),
                                        profile_id, interpolate, frozenset(exclude)), target)

    def _answer(self, req: PathRequest, target: Extraction) -> Attempt:
        attempt = Attempt(req.ctx.kernel_type, target=target)
        exact = self._exact(req, target, attempt)
        if exact is not None or attempt.reason is not None:
            attempt.result = exact
            return attempt
        if not req.interpolate:
            return _fail(attempt, Reason.INTERPOLATION_DISABLED, "exact coordinate not measured")
        return self._interpolate(req, target, attempt)

    def _exact(self, req: PathRequest, target: Extraction, attempt: Attempt) -> QueryResult | None:
        rows = self.queries.points_at(req.profile_id, attempt.kernel, req.path.name,
                                      target.regime_key, target.axes, req.exclude)
        if not rows:
            return None
        policy = req.ctx.policy
        outcome = merge_coordinate(rows, policy.column_rank,
                                   unique_required=policy.require_semantic_unique,
                                   semantic=target.semantic)
        if outcome.merged is None:
            if outcome.ambiguous:
                _fail(attempt, Reason.AMBIGUOUS_DUPLICATES,
                      f"rows at the exact coordinate disagree ({'; '.join(outcome.notes)}) "
                      "and the kernel requires semantically unique rows")
                attempt.notes["ambiguous_rows"] = outcome.ambiguous
            return None
        merged = outcome.merged
        details = self._success_details(req, target, "exact_coordinate", 0)
        details.update(matched_rows=[r.provenance() for r in merged.rows],
                       latency_column=merged.latency_column, candidate_count=len(merged.rows))
        if merged.duplicates:
            details["duplicates"] = merged.duplicates
        return QueryResult.measured(merged.latency_us, **details)

    def _interpolate(self, req: PathRequest, target: Extraction, attempt: Attempt) -> Attempt:
        policy = req.ctx.policy
        ceiling = _ceiling(req.path, policy)
        regime_slice = self.queries.regime_slice(req.profile_id, attempt.kernel, req.path.name,
                                                 target.regime_key, req.exclude)
        if len(regime_slice) == 0:
            stated = self._stated(req, target, attempt)
            return stated if stated is not None else self._regime_mismatch(req, target,
                                                                           attempt)
        tried: list[dict[str, Any]] = []
        for group in req.path.groups_for(target):
            if len(group) > ceiling:
                tried.append({"axes": _names(req.path, group), "outcome": "dimension_blocked",
                              "ceiling": ceiling})
                continue
            found = self._group(req, target, regime_slice, group, tried)
            if found is not None:
                details = self._success_details(req, target, found.method, len(group))
                details.update(found.details, interpolation_path=tried)
                attempt.result = QueryResult(found.latency_us, QuerySource.INTERPOLATED,
                                             CONFIDENCE_BY_DIM[len(group)], None, details)
                return attempt
        attempt.notes["interpolation_path"] = tried
        return _fail(attempt, *_miss_reason(tried))

    def _group(
        self,
        req: PathRequest,
        target: Extraction,
        regime_slice: RegimeSlice,
        group: tuple[int, ...],
        tried: list[dict[str, Any]],
    ) -> GroupAnswer | None:
        """Interpolate on one axis group, one latency column at a time (source purity)."""
        columns = self._candidates(req, target, regime_slice, group)
        if not columns:
            tried.append({"axes": _names(req.path, group), "outcome": "insufficient_candidates",
                          "candidates": 0, "message": "no point shares the fixed axes"})
        every = req.path.axis_transforms(req.ctx.policy)
        transforms = tuple([every[i] for i in group])
        goal = [float(fn(float(target.axes[i]))) if fn else float(target.axes[i])
                for i, fn in zip(group, transforms)]
        names = _names(req.path, group)
        for prepared in columns:
            geometry = self._geometry(req, target, group, prepared, transforms, goal, names)
            tried.append({"axes": list(names), "latency_column": prepared.column,
                          "candidates": len(prepared.points),
                          "ambiguous_excluded": prepared.ambiguous,
                          "outcome": geometry.diagnostic.value, "message": geometry.message})
            if geometry.ok:
                return _interpolated(prepared, geometry, len(group))
        return None

    def _candidates(self, req: PathRequest, target: Extraction, regime_slice: RegimeSlice,
                    group: tuple[int, ...]) -> Candidates:
        """The group's candidate rows per latency column; cached per regime, group,
        fixed-axis values, semantic and exclusion."""
        fixed = () if len(group) == len(target.axes) else tuple(  # a group of every axis
            (i, target.axes[i]) for i in range(len(target.axes)) if i not in group)
        policy = req.ctx.policy
        key = (req.profile_id, req.ctx.kernel_type, req.path.name, target.regime_key, group,
               fixed, target.semantic, req.exclude, policy.require_semantic_unique,
               policy.prefer_profiling_rows)
        cached = self._prepared.get(key)
        if cached is not None:
            return cached
        candidates = Candidates.of(regime_slice, group, fixed, target.semantic, policy)
        self._prepared.put(key, candidates)
        return candidates

    def _geometry(self, req: PathRequest, target: Extraction, group: tuple[int, ...],
                  prepared: Prepared, transforms: tuple[AxisTransform | None, ...],
                  goal: list[float], names: list[str]) -> GeometryResult:
        if len(group) == 1:
            return prepared.line(transforms).at(goal[0], names[0])
        coords, values = prepared.coords(transforms), prepared.values
        key = (req.profile_id, req.ctx.kernel_type, req.path.name, target.regime_key, group,
               tuple(target.axes[i] for i in range(len(target.axes)) if i not in group),
               prepared.column, target.semantic, req.exclude)
        tri = self.triangulations.get_or_build(key, coords) if len(coords) > len(group) else None
        if isinstance(tri, GeometryResult):
            return tri
        return interpolate_simplex(coords, values, np.array(goal), triangulation=tri,
                                   axis_names=names)

    def _stated(self, req: PathRequest, target: Extraction, attempt: Attempt) -> Attempt | None:
        """The answer of the regime the caller's stated equivalences name instead of the
        target's own (which has no point), with the substitutions in its details; None
        when none is stated for it or that regime does not answer either."""
        policy = req.regime_policy
        applied = policy.apply(req.ctx.entry.op, req.ctx.kernel_type, target.regime) \
            if policy is not None else None
        if applied is None:
            return None
        regime, used = applied
        stated = self._answer(replace(req, regime_policy=None),
                              Extraction(regime, target.axes, target.semantic))
        equivalences = [u.to_json() for u in used]
        if stated.result is None:
            attempt.notes["regime_equivalences_missed"] = {
                "equivalences": equivalences,
                "reason": stated.reason.value if stated.reason else None,
                "message": stated.message}
            return None
        stated.result.details["regime_equivalences"] = equivalences
        stated.result.details["regime_of_target"] = dict(target.regime)
        return stated

    def nearest_of(self, req: PathRequest, attempt: Attempt) -> Nearest:
        """The nearest measured regimes of an attempt that missed for want of its regime
        (``nearest_regime.closest``), not yet answered; none for any other attempt. Kept
        per kernel, path and the target's regime text (a search misses one regime at every
        new shape, and the answer does not depend on the shape); callers only read them."""
        from profstore.lookup.nearest_regime import closest

        if (attempt.reason is not Reason.REGIME_MISMATCH or attempt.target is None
                or not attempt.notes.get("kernel_points")):
            return []
        key = (req.profile_id, attempt.kernel, req.path.name, attempt.target.regime_key)
        found = self._nearest.get(key)
        if found is None:
            regimes = self.queries.regime_keys(req.profile_id, attempt.kernel, req.path.name)
            found = closest(attempt.target.regime, regimes)
            self._nearest.put(key, found)
        return found

    def answer_nearest(self, req: PathRequest, attempt: Attempt,
                       nearest: Nearest) -> list[dict[str, Any]]:
        """``nearest`` (``nearest_of``'s) answered at the attempt's coordinate, those that
        answer first, as JSON (store/lookup/nearest_regime.py)."""
        from profstore.lookup.nearest_regime import answered

        assert attempt.target is not None, "nearest_of finds none for an attempt without one"
        inner = req if req.regime_policy is None else replace(req, regime_policy=None)
        return [n.to_json() for n in answered(attempt.kernel, attempt.target, nearest,
                                              lambda other: self._regime_answer(inner, other))]

    def _regime_answer(self, req: PathRequest, other: Extraction) -> RegimeAnswer:
        """``_answer_in`` as a miss names it, kept per regime, coordinate and options: in a
        search, misses in several regimes name one nearest regime at each new shape (on
        the dense reference search, 43 % of a worker's answers were asked before)."""
        from profstore.lookup.nearest_regime import RegimeAnswer

        key = (req.profile_id, req.ctx.kernel_type, req.path.name, other.regime_key,
               tuple(other.axes), other.semantic, req.exclude, req.interpolate, req.ctx.policy)
        found = self._regime_answers.get(key)
        if found is None:
            found = RegimeAnswer.of(self._answer_in(req, other))
            self._regime_answers.put(key, found)
        return found

    def _answer_in(self, req: PathRequest, other: Extraction) -> Attempt:
        """``_answer`` in a neighbouring regime, whose points may have other axes than
        the target (then no answer: the coordinate means something else there)."""
        kernel = req.ctx.kernel_type
        width = self.queries.regime_slice(req.profile_id, kernel, req.path.name,
                                          other.regime_key, req.exclude).axes.shape[1]
        if width != len(other.axes):
            return _fail(Attempt(kernel, target=other), Reason.TARGET_UNAVAILABLE,
                         f"its points have {width} axes, the target {len(other.axes)}")
        return self._answer(req, other)

    def _regime_mismatch(self, req: PathRequest, target: Extraction, attempt: Attempt) -> Attempt:
        points, regimes = self.queries.regime_stats(req.profile_id, attempt.kernel, req.path.name)
        refusals = self.queries.refusal_counts(req.profile_id, attempt.kernel, req.path.name)
        attempt.notes.update(kernel_points=points, kernel_regimes=regimes,
                             path_refusals=refusals)
        if points == 0 and refusals:
            return _fail(attempt, Reason.REGIME_MISMATCH,
                         f"every {attempt.kernel} row was refused by the {req.path.name} path")
        return _fail(attempt, Reason.REGIME_MISMATCH,
                     f"no {attempt.kernel} row shares the target regime "
                     f"({points} points in {regimes} other regimes)")

    def _success_details(self, req: PathRequest, target: Extraction, method: str,
                         dim: int) -> dict[str, Any]:
        entry = req.ctx.entry
        return {
            "kernel_type": req.ctx.kernel_type,
            "query_mode": entry.query_mode if entry else None,
            "compute_subcategory": entry.compute_subcategory if entry else None,
            "path": req.path.name,
            "method": method,
            "interpolation_dim": dim,
            "axes": dict(zip(req.path.axis_names, target.axes)),
            "target_regime": dict(target.regime),
            **req.path.describe(target),
        }


def _fail(attempt: Attempt, reason: Reason, message: str) -> Attempt:
    attempt.reason = reason
    attempt.message = message
    return attempt


def _ceiling(path: OperatorPath, policy: KernelPolicy) -> int:
    if policy.max_interpolation_dim is None:
        return path.ceiling
    return min(path.ceiling, policy.max_interpolation_dim)


def _names(path: OperatorPath, group: Sequence[int]) -> list[str]:
    return [path.axis_names[i] for i in group]


def _miss_reason(tried: list[dict[str, Any]]) -> tuple[Reason, str]:
    """The most telling reason among the group attempts, by ``result.ACROSS_AXIS_GROUPS``:
    a corrupt latency or a target beyond the measured hull/range, then a group blocked by
    max_interpolation_dim, then too few or degenerate candidates (the first group with a
    reason gives its message: the highest dimension attempted has the last word)."""
    attempted: dict[Reason, str] = {}
    for t in tried:
        if t["outcome"] != Reason.DIMENSION_BLOCKED.value:
            attempted.setdefault(DIAGNOSTIC_REASON[Diagnostic(t["outcome"])],
                                 t.get("message", ""))
    blocked = [t for t in tried if t["outcome"] == Reason.DIMENSION_BLOCKED.value]
    chosen = most_specific([*attempted, *([Reason.DIMENSION_BLOCKED] if blocked else [])],
                           ACROSS_AXIS_GROUPS)
    if chosen is None:
        return Reason.INSUFFICIENT_CANDIDATES, "no axis group had enough candidates"
    if chosen is Reason.DIMENSION_BLOCKED:
        lower = "; ".join(f"{k.value}: {v}" for k, v in attempted.items())
        return chosen, (
            f"axis groups above max_interpolation_dim {blocked[0]['ceiling']} are blocked"
            + (f" and lower ones missed ({lower})" if lower else ""))
    return chosen, attempted[chosen]
