"""The base exact lookup (Phase 1, RFC §2.1): input signature, then alternates in order.

Also the two base lookups built on it: static composites (sum of sub-kernel hits,
PARTIAL when some miss) and base elementwise (output shape, dtype byte-ratio scaling).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from profstore.lookup.attempt import Attempt
from profstore.lookup.duplicate_rows import merge_coordinate
from profstore.model.dtypes import element_size, to_profiler_dtype
from profstore.model.exact_keys import target_keys, target_signature
from profstore.model.leaf import LeafOp
from profstore.model.mapping import MappingEntry, VersionMapping
from profstore.model.result import QueryResult, QuerySource, Reason
from profstore.model.shapes import logical_shape

if TYPE_CHECKING:
    from profstore.storage.queries import CandidateQueries
    from profstore.storage.regime_slice import MeasuredRow

BYTE_RATIO_CONFIDENCE = 0.8



class BaseExact:
    def __init__(self, queries: CandidateQueries) -> None:
        self.queries = queries

    def lookup(self, leaf: LeafOp, entry: MappingEntry, mapping: VersionMapping,
               profile_id: int, exclude: frozenset[int] = frozenset()
               ) -> tuple[QueryResult | None, list[Attempt]]:
        attempts = []
        for kernel in entry.kernels:
            attempt = self._kernel(leaf, entry, mapping, profile_id, kernel, exclude)
            attempts.append(attempt)
            if attempt.result is not None:
                if kernel != entry.kernels[0]:
                    attempt.result.details["fallback_from"] = entry.kernels[0]
                return attempt.result, attempts
        return None, attempts

    def _kernel(self, leaf: LeafOp, entry: MappingEntry, mapping: VersionMapping,
                profile_id: int, kernel: str, exclude: frozenset[int]) -> Attempt:
        """A row found proves the kernel's CSV is there, so its presence is asked only
        when no key matches (or the leaf has no tensors): a hit costs one query."""
        attempt = Attempt(kernel)
        try:
            shapes, dtypes = target_signature(leaf, entry, kernel)
        except ValueError:  # a dtype without a profiler name: only where the CSV exists
            if self._absent(attempt, profile_id):
                return attempt
            raise
        if not shapes:
            return self._absent(attempt, profile_id) or _failed(
                attempt, Reason.TARGET_UNAVAILABLE, "leaf has no tensors")
        keys = target_keys(shapes, dtypes)
        found = self.queries.exact_key_rows(profile_id, kernel, keys, exclude)
        for key in keys:
            rows = found.get(key)
            if not rows:
                continue
            policy = mapping.policy(kernel)
            outcome = merge_coordinate(rows, policy.column_rank,
                                       unique_required=policy.require_semantic_unique)
            if outcome.merged is None:
                attempt.reason = Reason.AMBIGUOUS_DUPLICATES
                attempt.message = "; ".join(outcome.notes)
                return attempt
            attempt.result = _measured(outcome.merged.latency_us, outcome.merged.rows, kernel,
                                       outcome.merged.duplicates, key=key)
            return attempt
        return self._absent(attempt, profile_id) or _failed(
            attempt, Reason.NO_EXACT_MATCH, f"no {kernel} row with input signature {keys[0]}")

    def _absent(self, attempt: Attempt, profile_id: int) -> Attempt | None:
        """The attempt failed with ``csv_not_found`` when the kernel has no CSV, else None."""
        if self.queries.kernel_present(profile_id, attempt.kernel):
            return None
        return _failed(attempt, Reason.CSV_NOT_FOUND, f"no {attempt.kernel}.csv")

    def elementwise(self, leaf: LeafOp, entry: MappingEntry, mapping: VersionMapping,
                    profile_id: int, exclude: frozenset[int] = frozenset()
                    ) -> tuple[QueryResult | None, list[Attempt]]:
        """Phase 1 base elementwise: match the output shape; a row of another dtype is
        scaled by the element-size ratio (confidence below 1)."""
        if not leaf.outputs:
            return None, [Attempt(entry.kernels[0] if entry.kernels else "",
                                  reason=Reason.TARGET_UNAVAILABLE, message="no output")]
        out = leaf.outputs[0]
        dtype = to_profiler_dtype(out.dtype)
        attempts = []
        for kernel in entry.kernels:
            if not self.queries.kernel_present(profile_id, kernel):
                attempts.append(Attempt(kernel, reason=Reason.CSV_NOT_FOUND, message="no CSV"))
                continue
            rows = self.queries.output_shape_rows(profile_id, kernel,
                                                  logical_shape(out.shape, out.format), exclude)
            if rows:
                return self._scaled(rows, dtype, kernel, mapping), attempts
            attempts.append(Attempt(kernel, reason=Reason.NO_EXACT_MATCH,
                                    message=f"no {kernel} row with output shape {out.shape}"))
        return None, attempts

    def _scaled(self, rows: list[tuple[str, MeasuredRow]], dtype: str, kernel: str,
                mapping: VersionMapping) -> QueryResult:
        same = [r for d, r in rows if d == dtype]
        rank = mapping.policy(kernel).column_rank
        if same:
            merged = merge_coordinate(same, rank, unique_required=False).merged
            assert merged is not None, _ALWAYS_MERGED
            return _measured(merged.latency_us, merged.rows, kernel, merged.duplicates,
                             method="base_elementwise")
        row_dtype, _ = rows[0]
        chosen = [r for d, r in rows if d == row_dtype]
        merged = merge_coordinate(chosen, rank, unique_required=False).merged
        assert merged is not None, _ALWAYS_MERGED
        ratio = element_size(dtype) / element_size(row_dtype)
        result = _measured(merged.latency_us * ratio, merged.rows, kernel, merged.duplicates,
                           method="base_elementwise_byte_ratio")
        result.details.update(byte_ratio=ratio, row_dtype=row_dtype, target_dtype=dtype)
        return replace(result, confidence=BYTE_RATIO_CONFIDENCE)


def _failed(attempt: Attempt, reason: Reason, message: str) -> Attempt:
    attempt.reason, attempt.message = reason, message
    return attempt


_ALWAYS_MERGED = "rows without a semantic discriminator merge unless uniqueness is required"


def composite(leaf: LeafOp, entry: MappingEntry, lookup_kernel: Callable[[str], QueryResult]
              ) -> QueryResult:
    """Sum of the sub-kernel hits; some missing → PARTIAL listing hit and missed kernels."""
    hits: dict[str, float] = {}
    missed: dict[str, str] = {}
    parts: dict[str, Any] = {}
    rows: dict[str, list[Any]] = {}
    for kernel in entry.sub_kernels:
        result = lookup_kernel(kernel)
        if result.latency_us is not None:
            hits[kernel] = float(result.latency_us)
            parts[kernel] = result.details.get("method")
            rows[kernel] = list(result.details.get("matched_rows", []))
        else:
            missed[kernel] = result.reason.value if result.reason else "miss"
    details: dict[str, Any] = {"method": "composite_sum", "sub_kernels": list(entry.sub_kernels),
                               "hit_kernels": hits, "missed_kernels": missed,
                               "part_methods": parts, "part_rows": rows}
    if not hits:
        return QueryResult.miss(Reason.NO_EXACT_MATCH, **details)
    total = sum(hits.values())
    if missed:
        return QueryResult(total, QuerySource.PARTIAL, len(hits) / len(entry.sub_kernels),
                           Reason.PARTIAL_COMPOSITE, details)
    return QueryResult.measured(total, **details)


def _measured(latency: float, rows: tuple[MeasuredRow, ...], kernel: str,
              duplicates: dict | None, *, key: str | None = None,
              method: str = "base_exact") -> QueryResult:
    details: dict[str, Any] = {
        "kernel_type": kernel,
        "method": method,
        "latency_column": rows[0].latency_column,
        "matched_rows": [r.provenance() for r in rows],
    }
    if key is not None:
        details["exact_key"] = key
    if duplicates:
        details["duplicates"] = duplicates
    return QueryResult.measured(latency, **details)


def sub_entry(entry: MappingEntry, kernel: str) -> MappingEntry:
    """A plain entry for one sub-kernel of a composite (same tc_input_count)."""
    return replace(entry, kernel_type=kernel, alternate_kernel_types=(), composite=False,
                   sub_kernels=())
