"""A QueryResult's details as a decision path a person can follow (``profstore explain`` and
the web view's explain page).

Sections in the order the lookup decides: mapping entry, exact ownership, the base exact
attempts, the path attempts per kernel (with the interpolation groups each tried), the
target regime and axes, the rows used (with weights), the result. Detail keys no section
knows are listed at the end, so nothing in the result is hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from profstore.lookup.nearest_regime import spell_differs
from profstore.model.leaf import LeafOp
from profstore.model.mapping import MappingEntry
from profstore.model.result import QueryResult
from profstore.paths.registry import path_for, selector_of
from profstore.presentation.text_table import Column, format_cell, render_table, to_json

INDENT = "  "
SHOWN_KEYS = frozenset({
    "op", "selector", "version", "kernel_type", "query_mode", "compute_subcategory",
    "exact_owner", "base_attempts", "attempted_kernels", "interpolation_attempts",
    "fallback_from", "target_regime", "axes", "target_axes", "interpolation_path",
    "last_geometry", "matched_rows", "method", "path", "interpolation_dim", "latency_column",
    "candidate_count", "boundary", "duplicates", "exact_key", "message", "note",
    "nearest_regimes", "regime_equivalences", "regime_of_target",
})
ROW_COLUMNS = [
    Column("file", "FILE"), Column("line", "LINE", True), Column("axes", "AXES"),
    Column("latency_us", "LATENCY (us)", True), Column("latency_column", "COLUMN"),
    Column("weight", "WEIGHT", True), Column("merged_rows", "MERGED", True),
]


ROWS_USED = "rows used"
"""The section title of the rows a result used (the web view links them to their rows)."""


def explain_sections(leaf: LeafOp, version: str, entry: MappingEntry | None,
                     result: QueryResult) -> list[tuple[str, list[str]]]:
    """(title, lines) in the order the lookup decides; empty sections are left out."""
    details = result.details
    extra = {k: v for k, v in details.items() if k not in SHOWN_KEYS}
    sections = [
        ("mapping", _mapping(entry)),
        ("ownership", [_ownership(leaf, entry, details)]),
        ("base exact lookup", _base(details)),
        ("path attempts", _path_attempts(details)),
        ("target", _target(details, entry)),
        ("interpolation path", _geometry(details.get("interpolation_path"))),
        (ROWS_USED, _rows(details)),
        ("stated regime equivalences", _equivalences(details)),
        ("result", _result(result)),
        ("nearest measured regimes", _nearest(details.get("nearest_regimes"))),
        ("other details", [f"{k}: {to_json(v)}" for k, v in extra.items()]),
    ]
    return [(title, body) for title, body in sections if body]


def explain_lines(leaf: LeafOp, version: str, entry: MappingEntry | None,
                  result: QueryResult) -> list[str]:
    lines = [f"{leaf.op} in {version}"]
    for title, body in explain_sections(leaf, version, entry, result):
        lines += ["", title, *(INDENT + line for line in body)]
    return lines


def _mapping(entry: MappingEntry | None) -> list[str]:
    if entry is None:
        return ["no mapping entry for this op"]
    return [
        f"selector: {selector_of(entry)}",
        f"kernel_type: {entry.kernel_type or entry.primary_kernel_type or '-'}",
        f"alternates: {', '.join(entry.alternate_kernel_types) or '-'}",
        f"tc_input_count: {format_cell(entry.tc_input_count)}",
        f"query_mode: {format_cell(entry.query_mode)}",
        f"compute_subcategory: {format_cell(entry.compute_subcategory)}",
    ]


def _ownership(leaf: LeafOp, entry: MappingEntry | None, details: Mapping[str, Any]) -> str:
    owner = details.get("exact_owner")
    if owner is None and entry is not None and entry.kernels:
        path = path_for(selector_of(entry), entry.kernels[0])
        if path is not None:
            owner = "path" if path.exact_owner_for(leaf) else "base"
    if owner == "path":
        return "exact owner: path (the base exact lookup is skipped)"
    if owner == "base":
        return "exact owner: base (base exact lookup first, then the path)"
    return "exact owner: - (this selector does not run a path)"


def _base(details: Mapping[str, Any]) -> list[str]:
    lines = []
    method = str(details.get("method") or "")
    if method.startswith("base_"):
        key = details.get("exact_key")
        lines.append(f"hit on {details.get('kernel_type')} ({method}"
                     + (f", key {key})" if key else ")"))
    for attempt in details.get("base_attempts") or []:
        lines += _attempt(attempt)
    return lines


def _path_attempts(details: Mapping[str, Any]) -> list[str]:
    lines = []
    for attempt in details.get("attempted_kernels") or []:
        lines += _attempt(attempt)
    for attempt in details.get("interpolation_attempts") or []:
        lines += _attempt(attempt, "after a PARTIAL base result: ")
    method = str(details.get("method") or "")
    if details.get("path") and not method.startswith("base_"):
        fallback = details.get("fallback_from")
        note = f" (after {fallback} failed)" if fallback else ""
        lines.append(f"{details.get('kernel_type')}: answered by path {details['path']} "
                     f"with {method}{note}")
    if "last_geometry" in details and not details.get("attempted_kernels"):
        lines += _geometry([details["last_geometry"]])
    return lines


def _attempt(attempt: Mapping[str, Any], prefix: str = "") -> list[str]:
    reason = attempt.get("reason") or "ok"
    message = attempt.get("message") or ""
    lines = [f"{prefix}{attempt.get('kernel')}: {reason}" + (f" — {message}" if message else "")]
    for key, value in attempt.items():
        if key in ("kernel", "reason", "message"):
            continue
        if key == "interpolation_path":
            lines += [INDENT + line for line in _geometry(value)]
        else:
            lines.append(f"{INDENT}{key}: {to_json(value)}")
    return lines


def _target(details: Mapping[str, Any], entry: MappingEntry | None) -> list[str]:
    lines = []
    regime = details.get("target_regime")
    if regime:
        lines.append(f"regime: {to_json(regime)}")
    axes = details.get("axes")
    if not axes and details.get("target_axes") is not None:
        axes = dict(zip(_axis_names(entry, len(details["target_axes"])),
                        details["target_axes"]))
    if axes:
        lines.append("axes: " + ", ".join(f"{k}={format_cell(v)}" for k, v in axes.items()))
    return lines


def _axis_names(entry: MappingEntry | None, count: int) -> list[str]:
    path = path_for(selector_of(entry), entry.kernels[0]) if entry and entry.kernels else None
    names = list(path.axis_names) if path is not None else []
    return names[:count] + [f"axis_{i}" for i in range(len(names), count)]


def _geometry(tried: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """One line per axis group and latency column tried: candidates and the outcome."""
    lines = []
    for step in tried or []:
        axes = "+".join(step.get("axes") or [])
        if step.get("outcome") == "dimension_blocked":
            lines.append(f"[{axes}] blocked: above the dimension ceiling {step.get('ceiling')}")
            continue
        column = step.get("latency_column")
        head = f"[{axes}]" + (f" {column}" if column else "")
        counts = f"{step.get('candidates', 0)} candidates"
        if step.get("ambiguous_excluded"):
            counts += f", {step['ambiguous_excluded']} ambiguous excluded"
        message = step.get("message") or ""
        lines.append(f"{head}: {counts} → {step.get('outcome')}"
                     + (f" ({message})" if message else ""))
    return lines


def _rows(details: Mapping[str, Any]) -> list[str]:
    rows = [{**row, "axes": ", ".join(format_cell(a) for a in row.get("axes") or []) or None}
            for row in details.get("matched_rows") or []]
    columns = [c for c in ROW_COLUMNS if any(r.get(c.key) is not None for r in rows)]
    lines = render_table(rows, columns).splitlines() if rows else []
    if any((r.get("merged_rows") or 1) > 1 for r in rows):
        lines.append("MERGED > 1: the vertex stands for that many rows at one coordinate, "
                     "merged (median); the row shown is one of them")
    boundary = details.get("boundary")
    if boundary:
        lines.append("boundary: " + ", ".join(f"{k}={format_cell(v)}"
                                                for k, v in boundary.items()))
    duplicates = details.get("duplicates")
    if duplicates:
        lines.append(f"duplicates merged: {to_json(duplicates)}")
    return lines


def _result(result: QueryResult) -> list[str]:
    details = result.details
    latency = "-" if result.latency_us is None else f"{format_cell(result.latency_us)} us"
    lines = [
        f"latency: {latency}",
        f"source: {result.source.value if result.source else '-'}",
        f"confidence: {format_cell(result.confidence)}",
        f"reason: {result.reason.value if result.reason else '-'}",
    ]
    method = details.get("method")
    if method:
        dim = details.get("interpolation_dim")
        lines.append(f"method: {method}" + (f" ({dim}-D)" if dim else ""))
    for key in ("message", "note"):
        if details.get(key):
            lines.append(f"{key}: {details[key]}")
    return lines


def _equivalences(details: Mapping[str, Any]) -> list[str]:
    stated = details.get("regime_equivalences") or []
    if not stated:
        return []
    lines = [f"{e['field']}: target {format_cell(e['target'])} read as {format_cell(e['used'])}"
             " (stated by the caller's regime policy)" for e in stated]
    own = details.get("regime_of_target")
    if own:
        lines.append(f"the target's own regime, unmeasured: {to_json(own)}")
    return lines


def _nearest(nearest: Iterable[Mapping[str, Any]] | None) -> list[str]:
    """One line per nearest regime: the fields that differ and what it answers at the
    target (the miss stays a miss)."""
    lines = []
    for n in nearest or []:
        answer = (f"{format_cell(n['latency_us'])} us {n.get('source')} ({n.get('method')})"
                  if n.get("latency_us") is not None
                  else f"no answer ({n.get('miss_reason') or 'miss'})")
        lines.append(f"{n.get('kernel')}: differs in {spell_differs(n.get('differs') or {})}"
                     f"; {n.get('points')} points; at the target: {answer}")
        lines.append(f"{INDENT}regime: {to_json(n.get('regime'))}")
    if lines:
        lines.append("not used: the answer stays a miss; a regime policy (--regime-policy) "
                     "may state the values equivalent")
    return lines
