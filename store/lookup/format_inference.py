"""Step 3 of lookup/format_resolution.py: formats inferred from the measured rows of one kernel.

Only the unstated tensors whose format changes the target (its regime or axes) are
tried, each in every format the kernel's rows hold; the others read ND (their format
does not enter the lookup). When every assignment that answers gives one latency, that
answer stands (``format_source: inferred``); when assignments answer differently, the
attempt misses with ``format_ambiguous``, naming each candidate and how to state a
format; when none answers, the all-ND attempt's miss is returned.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from profstore.lookup.attempt import Attempt
from profstore.lookup.format_resolution import (
    FormatSource,
    Prefilled,
    unstated_below_rank,
    unstated_units,
)
from profstore.lookup.path_runner import PathRequest, PathRunner
from profstore.lookup.regime_policy import RegimePolicy
from profstore.model.clock_cache import ClockCache
from profstore.model.leaf import LeafOp
from profstore.model.result import Reason
from profstore.paths.base import Extraction, OperatorPath, Refusal, TargetContext
from profstore.storage.provenance import kernel_formats
from profstore.storage.snapshot import SnapshotEngine

MAX_ASSIGNMENTS = 64
"""At most this many format assignments are tried for one target (ND-first order)."""

HOW_TO_STATE = ("state the format: TensorSpec.format / a descriptor's \"format\", "
                "ProfstoreDataSource(format_of=...) or format_policy=..., "
                "profstore lookup --format-policy")


class FormatInference:
    """Runs a path attempt on a leaf whose formats are partly unstated."""

    def __init__(self, snapshots: SnapshotEngine, runner: PathRunner) -> None:
        self.snapshots = snapshots
        self.runner = runner
        self._formats: ClockCache[tuple[int, str], tuple[str, ...]] = ClockCache(1024)

    def formats(self, profile_id: int, kernel: str) -> tuple[str, ...]:
        """The kernel's measured formats, ND first (ND alone when it has no rows)."""
        key = (profile_id, kernel)
        cached = self._formats.get(key)
        if cached is None:
            found = kernel_formats(self.snapshots, profile_id, kernel)
            cached = ("ND", *sorted(found - {"ND"}))
            self._formats.put(key, cached)
        return cached

    def run(self, path: OperatorPath, prefilled: Prefilled, ctx: TargetContext,
            profile_id: int, interpolate: bool, exclude: frozenset[int], *,
            regime_policy: RegimePolicy | None = None) -> Attempt:
        """A path that reads formats as layout only (``OperatorPath.formats_as_layout``)
        sees no format of a tensor of rank < 4: where every unstated tensor is one, the
        leaf is looked up as it is (its unstated formats read as ND would give the same
        target), without building the ND-filled copy. Only where the kernel's CSV exists,
        as for ``_format_blind``: without one (the runner answers ``csv_not_found`` before
        it extracts anything) the flow below runs, and raises what it would raise."""
        def attempt(leaf: LeafOp, target: Extraction | Refusal | None = None) -> Attempt:
            return self.runner.run(PathRequest(path, leaf, ctx, profile_id, interpolate,
                                               exclude, regime_policy), target)

        if path.formats_as_layout and unstated_below_rank(prefilled.leaf, 4):
            as_it_is = attempt(prefilled.leaf)
            if as_it_is.reason is not Reason.CSV_NOT_FOUND:
                return _noted(as_it_is, prefilled, {})
        pending_units = unstated_units(prefilled.leaf)
        if not pending_units:
            return _noted(attempt(prefilled.leaf), prefilled, {})
        pending = list(pending_units)
        nd = {unit: "ND" for unit in pending}
        if self._format_blind(path, profile_id, ctx.kernel_type):
            return _noted(attempt(prefilled.leaf.with_formats(nd)), prefilled, {})
        formats = self.formats(profile_id, ctx.kernel_type)
        trials = _Trials(path, prefilled.leaf, ctx)
        relevant = _relevant(trials, pending, formats)
        if not relevant:
            return _noted(attempt(*trials.of(nd)), prefilled, {})
        tried = []
        for combo in itertools.islice(itertools.product(formats, repeat=len(relevant)),
                                      MAX_ASSIGNMENTS):
            assignment = {**nd, **dict(zip(relevant, combo))}
            tried.append((assignment, attempt(*trials.of(assignment))))
        return _settle(tried, relevant, prefilled, path.format_anchor_axes)

    def _format_blind(self, path: OperatorPath, profile_id: int, kernel: str) -> bool:
        """Whether no format of an unstated unit can change the target, known without
        trial extractions: a path whose target reads no format, or a kernel whose rows are
        all ND. Asked only where the kernel's CSV exists, so the runner reaches the same
        target extraction (and any error it raises)."""
        if not self.runner.queries.kernel_present(profile_id, kernel):
            return False
        return not path.target_reads_formats or self.formats(profile_id, kernel) == ("ND",)


class _Trials:
    """The leaf in each format assignment tried, with its target extraction, each made
    once: the relevance test extracts the assignments the attempts then look up."""

    def __init__(self, path: OperatorPath, leaf: LeafOp, ctx: TargetContext) -> None:
        self.path, self.leaf, self.ctx = path, leaf, ctx
        self._made: dict[tuple[tuple[str, str], ...], tuple[LeafOp, Extraction | Refusal]] = {}

    def of(self, assignment: dict[str, str]) -> tuple[LeafOp, Extraction | Refusal]:
        key = tuple(sorted(assignment.items()))
        made = self._made.get(key)
        if made is None:
            leaf = self.leaf.with_formats(assignment)
            made = self._made[key] = (leaf, self.path.target_regime(leaf, self.ctx))
        return made

    def extraction(self, assignment: dict[str, str]) -> Any:
        """What the relevance test compares: the target, or the refusal's reason."""
        found = self.of(assignment)[1]
        if isinstance(found, Refusal):
            return ("refused", found.reason, found.message)
        return (found.regime_key, found.axes, found.semantic)


def _relevant(trials: _Trials, pending: Sequence[str], formats: Sequence[str]) -> list[str]:
    """Unstated units whose format changes the target extraction."""
    nd = {unit: "ND" for unit in pending}
    baseline = trials.extraction(nd)
    return [unit for unit in pending
            if any(trials.extraction({**nd, unit: fmt}) != baseline
                   for fmt in formats if fmt != "ND")]


def _same(values: Sequence[float]) -> bool:
    return all(math.isclose(v, values[0], rel_tol=1e-9, abs_tol=1e-12) for v in values)


def _distance(attempt: Attempt, anchors: frozenset[str]) -> tuple[int, bool]:
    """How far an answer is from a measurement: its interpolation dimension (0: exact),
    then whether it interpolated across one of the path's format anchor axes."""
    result = attempt.result
    if result is None:
        return (0, False)
    steps = result.details.get("interpolation_path") or [{}]
    crossed = bool(anchors & set(steps[-1].get("axes") or ()))
    return (int(result.details.get("interpolation_dim") or 0), crossed)


def _settle(tried: list[tuple[dict[str, str], Attempt]], relevant: Sequence[str],
            prefilled: Prefilled, anchors: frozenset[str]) -> Attempt:
    """The answer of the assignments that answer closest to a measurement (exact, else the
    lowest interpolation dimension, then not across an anchor axis): the format whose
    rows measure the target's own weight wins over one that reaches it across others."""
    hits = [(a, t) for a, t in tried if t.result is not None]
    if not hits:
        return _noted(tried[0][1], prefilled, tried[0][0], relevant)
    candidates: list[dict[str, Any]] = [
        {"formats": {u: a[u] for u in relevant}, "latency_us": t.result.latency_us,
         "method": t.result.details.get("method"),
         "interpolation_dim": _distance(t, anchors)[0],
         "across_anchor_axes": _distance(t, anchors)[1]}
        for a, t in hits if t.result is not None]
    closest = min(_distance(t, anchors) for _, t in hits)
    best = [(a, t) for a, t in hits if _distance(t, anchors) == closest]
    if _same([t.result.latency_us for _, t in best
              if t.result is not None and t.result.latency_us is not None]):
        assignment, chosen = best[0]
        noted = _noted(chosen, prefilled, assignment, relevant)
        if len(hits) > 1 and noted.result is not None:
            noted.result.details["format_candidates"] = candidates
        return noted
    candidates = [c for c in candidates
                  if (c["interpolation_dim"], c["across_anchor_axes"]) == closest]
    spelled = "; ".join(f"{_spell(c['formats'])}: {c['latency_us']:.4g} us" for c in candidates)
    attempt = Attempt(tried[0][1].kernel, reason=Reason.FORMAT_AMBIGUOUS,
                      message=f"unstated formats: the measured rows answer {spelled}; "
                              + HOW_TO_STATE)
    attempt.notes.update(format_candidates=candidates, unstated_units=list(relevant))
    return attempt


def _spell(formats: dict[str, str]) -> str:
    return ", ".join(f"{unit}={fmt}" for unit, fmt in formats.items())


_STATED = FormatSource.STATED.value


def _noted(attempt: Attempt, prefilled: Prefilled, assignment: dict[str, str],
           inferred: Sequence[str] = ()) -> Attempt:
    """Record where the formats came from: the weakest source as ``format_source``, and per
    unit the formats the answer depended on (``format_sources``)."""
    if attempt.result is not None:
        details = attempt.result.details
        if not (prefilled.sources or assignment or inferred):  # nothing was filled in
            details["format_source"] = _STATED
            return attempt
        details["format_source"] = prefilled.source(bool(inferred)).value
        sources = {unit: source.value for unit, source in prefilled.sources.items()}
        sources.update({unit: FormatSource.INFERRED.value for unit in inferred})
        if sources:
            details["format_sources"] = sources
        if assignment:
            details["resolved_formats"] = dict(assignment)
    return attempt

