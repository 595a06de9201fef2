"""The lookup flow of RFC §3.1: mapping → ownership → exact → path → result.

1. Resolve the mapping entry; accounting entries (zero_cost, accepted_miss) answer 0.
2. Communication goes to the base alpha-beta path; the wrapper never interpolates it.
3. Exact ownership (moe_fused, compute_scale, quantized_matmul, non-scalar
   elementwise) skips the base exact lookup; every other leaf gets it first and a
   complete hit returns.
4. The path runs per kernel, alternates in mapping order: exact coordinate, then
   low-dimension-first interpolation inside the regime.
5. A base PARTIAL is preserved when interpolation fails; every miss has a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from profstore.lookup.attempt import Attempt
from profstore.lookup.base_exact import composite, sub_entry
from profstore.lookup.format_resolution import FormatPolicy, prefill
from profstore.lookup.nearest_regime import MAX_NEAREST
from profstore.model.leaf import LeafOp
from profstore.model.mapping import MappingEntry, VersionMapping
from profstore.model.result import QueryResult, QuerySource, Reason, most_specific
from profstore.paths.base import OperatorPath, TargetContext
from profstore.paths.registry import path_for, selector_of

if TYPE_CHECKING:
    from profstore.lookup.base_exact import BaseExact
    from profstore.lookup.communication import CommunicationLookup
    from profstore.lookup.format_inference import FormatInference
    from profstore.lookup.path_runner import PathRunner
    from profstore.lookup.regime_policy import RegimePolicy


@dataclass(frozen=True)
class Profile:
    id: int
    alias: str
    mapping: VersionMapping
    comm_profile_id: int | None


@dataclass(frozen=True)
class LookupOptions:
    interpolation: bool = True
    exclude: frozenset[int] = frozenset()
    formats: FormatPolicy | None = None
    regimes: RegimePolicy | None = None


ARGUMENT_FREE = frozenset({"zero_cost", "accepted_miss"})
"""Selectors whose answer reads no argument of the leaf (``answer_by_name``)."""


class Dispatcher:
    def __init__(self, base: BaseExact, runner: PathRunner, comm: CommunicationLookup,
                 inference: FormatInference) -> None:
        self.base = base
        self.runner = runner
        self.comm = comm
        self.inference = inference

    def lookup(self, leaf: LeafOp, profile: Profile, options: LookupOptions) -> QueryResult:
        entry = profile.mapping.entry(leaf.op)
        if entry is None:
            unmapped = QueryResult.miss(Reason.UNMAPPED, op=leaf.op, message=(
                f"{leaf.op} is not in the {profile.alias} mapping"))
            return _named(unmapped, leaf.op, None, profile)
        selector = selector_of(entry)
        return _named(self._dispatch(leaf, entry, selector, profile, options), leaf.op,
                      selector, profile)

    def _dispatch(self, leaf: LeafOp, entry: MappingEntry, selector: str, profile: Profile,
                  options: LookupOptions) -> QueryResult:
        if selector in ARGUMENT_FREE:
            return _accounted(entry, selector)
        if selector == "communication":
            return self.comm.lookup(leaf, entry.kernels, profile.comm_profile_id)
        if selector == "composite":
            return self._composite(leaf, entry, profile, options)
        if selector == "compute_subcategory_unknown":
            return QueryResult.miss(
                Reason.COMPUTE_SUBCATEGORY_UNKNOWN,
                message=f"unknown compute_subcategory {entry.compute_subcategory!r}")
        path = path_for(selector, entry.kernels[0] if entry.kernels else "")
        if path is None or not entry.kernels:
            return QueryResult.miss(Reason.UNMAPPED, message=f"no path for selector {selector}")
        return self._with_path(leaf, entry, selector, profile, options, path)

    def _with_path(self, leaf: LeafOp, entry: MappingEntry, selector: str, profile: Profile,
                   options: LookupOptions, path: OperatorPath) -> QueryResult:
        """Base exact first unless the path owns exact matching; then the path per kernel.

        With interpolation disabled, a path whose exact coordinate is its base lookup
        (``specialized_base``: the attention paths, RFC §4.3.2) still answers it and never
        falls through to the generic input-signature lookup; every other leaf gets the
        Phase 1 base result alone. Unstated formats are resolved first (format_resolution.py)."""
        prefilled = prefill(leaf, entry, options.formats)
        leaf = prefilled.leaf
        owns_exact = path.exact_owner_for(leaf)
        if not options.interpolation and not path.specialized_base:
            owns_exact = False
        base: QueryResult | None = None
        base_attempts: list[Attempt] = []
        if not owns_exact:
            base, base_attempts = self._base(leaf, entry, selector, profile, options)
            if base is not None and base.source is not QuerySource.PARTIAL:
                base.details.setdefault("exact_owner", "base")
                return base
            if not options.interpolation:
                return base or _miss_from(base_attempts, [], leaf, "interpolation disabled")
        attempts = []
        for kernel in entry.kernels:
            ctx = TargetContext(entry, kernel, profile.mapping.policy(kernel))
            attempt = self.inference.run(path, prefilled, ctx, profile.id,
                                         options.interpolation, options.exclude,
                                         regime_policy=options.regimes)
            attempts.append(attempt)
            if attempt.result is not None:
                return _finish(attempt.result, entry, kernel, owns_exact, base_attempts)
            if attempt.reason is Reason.FORMAT_AMBIGUOUS:
                break  # an alternate kernel must not settle what the formats leave open
        if base is not None:
            base.details["interpolation_attempts"] = [a.summary() for a in attempts]
            return base
        nearest = self._nearest(attempts, entry, profile, options, path)
        note = "" if options.interpolation else "interpolation disabled"
        return _miss_from(base_attempts, attempts, leaf, note, nearest)

    def _nearest(self, attempts: list[Attempt], entry: MappingEntry, profile: Profile,
                 options: LookupOptions, path: OperatorPath) -> list[dict[str, Any]]:
        """The lookup is a miss: the nearest regimes of its regime misses, at most
        ``MAX_NEAREST``, fewest differing fields first (kernel order on ties; a kernel's own
        regimes are at one distance, those that answer first). Kernels are answered in that
        order and only until that many are named: a regime the miss would drop is never
        interpolated (each costs a lookup)."""
        from profstore.lookup.path_runner import PathRequest

        pending = []
        for index, attempt in enumerate(attempts):
            ctx = TargetContext(entry, attempt.kernel, profile.mapping.policy(attempt.kernel))
            req = PathRequest(path, None, ctx, profile.id, options.interpolation,
                              options.exclude)
            nearest = self.runner.nearest_of(req, attempt)
            if nearest:
                pending.append((len(nearest[0][2]), index, req, attempt, nearest))
        named: list[dict[str, Any]] = []
        for _, _, req, attempt, nearest in sorted(pending, key=lambda p: p[:2]):
            if len(named) >= MAX_NEAREST:
                break
            named += self.runner.answer_nearest(req, attempt, nearest)
        return named[:MAX_NEAREST]

    def _base(self, leaf: LeafOp, entry: MappingEntry, selector: str, profile: Profile,
              options: LookupOptions) -> tuple[QueryResult | None, list[Attempt]]:
        if selector == "elementwise":
            return self.base.elementwise(leaf, entry, profile.mapping, profile.id,
                                         options.exclude)
        return self.base.lookup(leaf, entry, profile.mapping, profile.id, options.exclude)

    def _composite(self, leaf: LeafOp, entry: MappingEntry, profile: Profile,
                   options: LookupOptions) -> QueryResult:
        if not entry.sub_kernels:
            return QueryResult.miss(
                Reason.UPSTREAM_LEAF_SEMANTICS_MISSING,
                message="composite decomposed upstream: query its leaf operators instead")

        def one(kernel: str) -> QueryResult:
            if kernel.startswith("hcom_"):
                payload = leaf.outputs[0] if leaf.outputs else None
                return self.comm.lookup(leaf, (kernel,), profile.comm_profile_id, payload)
            result, attempts = self.base.lookup(leaf, sub_entry(entry, kernel), profile.mapping,
                                                profile.id, options.exclude)
            return result or _miss_from(attempts, [], leaf, "")

        result = composite(leaf, entry, one)
        if any(k.startswith("hcom_") for k in entry.sub_kernels):
            result.details["interpolation"] = (
                "not interpolated: the op has communication children, owned by the base")
        return result


def answer_by_name(op: str, profile: Profile) -> QueryResult | None:
    """What ``Dispatcher.lookup`` answers every leaf of ``op`` when that answer reads none
    of the leaf's arguments (an op the mapping marks zero_cost or accepted_miss), made
    from the op's name alone; None for any other op (its answer depends on them)."""
    entry = profile.mapping.entry(op)
    if entry is None:
        return None
    selector = selector_of(entry)
    if selector not in ARGUMENT_FREE:
        return None
    return _named(_accounted(entry, selector), op, selector, profile)


def _accounted(entry: MappingEntry, selector: str) -> QueryResult:
    if selector == "zero_cost":
        return QueryResult.measured(0.0, method="zero_cost", zero_cost=True,
                                    kernel_type=entry.kernel_type or "",
                                    note="mapping marks this op zero_cost")
    return QueryResult.measured(0.0, method="accepted_miss", zero_cost=True,
                                kernel_type="accepted_miss", note=entry.accepted_miss)


def _named(result: QueryResult, op: str, selector: str | None,
           profile: Profile) -> QueryResult:
    """The result with the op, its selector (an unmapped op has none) and the version."""
    result.details.setdefault("op", op)
    if selector is not None:
        result.details.setdefault("selector", selector)
    result.details.setdefault("version", profile.alias)
    return result


def _finish(result: QueryResult, entry: MappingEntry, kernel: str, owns_exact: bool,
            base_attempts: list[Attempt]) -> QueryResult:
    if kernel != entry.kernels[0]:
        result.details["fallback_from"] = entry.kernels[0]
    result.details["exact_owner"] = "path" if owns_exact else "base"
    if base_attempts:
        result.details["base_attempts"] = [a.summary() for a in base_attempts]
    return result


def _miss_from(base_attempts: list[Attempt], attempts: list[Attempt], leaf: LeafOp,
               note: str, nearest: list[dict[str, Any]] | None = None) -> QueryResult:
    """A miss whose reason is the most specific one among the attempts, with the nearest
    regimes of its regime misses (``Dispatcher._nearest``) as ``nearest_regimes``."""
    chosen = _primary_reason(attempts or base_attempts)
    details: dict[str, Any] = {
        "attempted_kernels": [a.summary() for a in attempts],
        "base_attempts": [a.summary() for a in base_attempts],
    }
    target = next((a.target for a in attempts if a.target is not None), None)
    if target is not None:
        details["target_axes"] = list(target.axes)
        details["target_regime"] = dict(target.regime)
    geometry = [p for a in attempts for p in a.notes.get("interpolation_path", [])]
    if geometry:
        details["last_geometry"] = geometry[-1]
    if note:
        details["note"] = note
    if nearest:
        details["nearest_regimes"] = nearest
    return QueryResult.miss(chosen, **details)


def _primary_reason(attempts: list[Attempt]) -> Reason:
    """The primary kernel's reason unless an alternate got further (a more specific one)."""
    chosen = most_specific(a.reason for a in attempts if a.reason is not None)
    return chosen or Reason.NO_EXACT_MATCH
