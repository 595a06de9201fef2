"""The minimal evaluation report of RFC §7.3: what was measured, what was interpolated, how
good the interpolation is on held-out points, and what is not covered.

Every figure is derived from the database, the version's mapping, the registered paths
and the workload replays; nothing about the corpus is hard-coded. ``store.evaluation.
document`` renders the sections as Markdown or as HTML with the plots embedded.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from profstore.api import Store
from profstore.evaluation.document import Image, Section, Table
from profstore.evaluation.holdout import HoldoutReport, known_profile
from profstore.evaluation.replay import SOURCES, ReplayReport
from profstore.paths.registry import ALL_PATHS, path_for, selector_of
from profstore.storage.accounting import (
    kernel_path_counts,
    kernels_with_files,
    points_per_path,
    refusal_counts,
)
from profstore.storage.catalog import interpolation_policies, profile_by_id
from profstore.storage.points import SUBTYPE_COLUMNS, SubtypeValues, subtype_values
from profstore.storage.urls import redact_url

REPO = Path(__file__).resolve().parents[2]
NOT_INTERPOLATED = frozenset({"zero_cost", "accepted_miss", "communication", "composite",
                              "compute_subcategory_unknown"})
PROVENANCE = ("directory", "device", "framework", "content_hash", "ingested_at", "files",
              "rows_read", "rows_accepted", "rows_rejected", "source_path")


def software_info() -> dict[str, str]:
    try:
        version = importlib.metadata.version("profstore")
    except importlib.metadata.PackageNotFoundError:
        text = (REPO / "pyproject.toml").read_text() if (REPO / "pyproject.toml").is_file() else ""
        found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        version = f"{found.group(1)} (source tree, not installed)" if found else "unknown"
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return {"profstore_version": version, "git_commit": commit}


def data_info(store: Store, version: str, database: str | None = None) -> dict[str, Any]:
    """The version's provenance; ``database`` is the URL it was opened with (a read-only
    SQLite engine does not keep it), shown redacted."""
    with store.engine.connect() as conn:
        row = profile_by_id(conn, known_profile(store, version).id)
    url = database or store.engine.url.render_as_string(hide_password=False)
    return {"version": row.alias, **{k: getattr(row, k) for k in PROVENANCE},
            "database": redact_url(url)}


def policies(store: Store, version: str) -> list[dict[str, Any]]:
    """The version's interpolation_policy rows, with each kernel's effective ceilings."""
    profile = known_profile(store, version)
    with store.engine.connect() as conn:
        rows = [asdict(policy) for policy in interpolation_policies(conn, profile.id)]
    for row in rows:
        limit, kernel = row["max_interpolation_dim"], row["kernel_type"]
        paths = {p.name: p for p in (path_for(selector_of(e), kernel)
                                     for e in profile.mapping.entries_for_kernel(kernel)) if p}
        row["ceilings"] = ", ".join(
            f"{name}:{path.ceiling if limit is None else min(path.ceiling, limit)}"
            for name, path in sorted(paths.items()))
    return rows


def unverified_scope(store: Store, version: str) -> dict[str, Any]:
    """Mapping entries routed to a path whose kernel has no CSV or no points on that path
    in this version, registered paths without points, and the subtype values the data of
    each specialised path actually covers."""
    profile = known_profile(store, version)
    with store.engine.connect() as conn:
        csv = kernels_with_files(conn, profile.id)
        points = {(c.kernel, c.path): c.points for c in kernel_path_counts(conn, profile.id)}
        refused = refusal_counts(conn, profile.id)
        coverage = _subtype_coverage(subtype_values(conn, profile.id))
    refusals: dict[tuple[str, str], Counter] = {}
    for r in refused:
        refusals.setdefault((r.kernel, r.path), Counter())[r.reason] = r.count
    gaps: dict[tuple[str, str, str, str], list[str]] = {}
    for op, entry in sorted(profile.mapping.entries.items()):
        if selector_of(entry) in NOT_INTERPOLATED:
            continue
        for kernel in entry.kernels:
            path = path_for(selector_of(entry), kernel)
            if path is None:
                continue
            if kernel not in csv:
                status = "no CSV"
            elif not points.get((kernel, path.name)):
                status = "CSV, no points on this path"
            else:
                continue
            gaps.setdefault((selector_of(entry), kernel, path.name, status), []).append(op)
    rows = [{"selector": s, "kernel": kern, "path": p, "status": st, "ops": ", ".join(ops),
             "refusals": dict(refusals.get((kern, p), {}))}
            for (s, kern, p, st), ops in sorted(gaps.items())]
    with_points = {b for (_, b) in points}
    idle = [p.name for p in ALL_PATHS if p.name not in with_points]
    for row in coverage:
        row["ops"] = ", ".join(_routed_ops(profile.mapping, row["kernel"], row["path"]))
    return {"gaps": rows, "paths_without_points": idle, "subtype_coverage": coverage}


def _routed_ops(mapping: Any, kernel: str, path: str) -> list[str]:
    """The mapping ops that send ``kernel`` to ``path``."""
    return sorted(op for op, entry in mapping.entries.items() if kernel in entry.kernels
                  and getattr(path_for(selector_of(entry), kernel), "name", None) == path)


def _subtype_coverage(combinations: Sequence[SubtypeValues]) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, set]] = {}
    for combination in combinations:
        slot = found.setdefault((combination.path, combination.kernel), {})
        for name, value in zip(SUBTYPE_COLUMNS, combination.values):
            if value is not None:
                slot.setdefault(name, set()).add(str(value))
    return [{"path": path, "kernel": kernel, "covered": "; ".join(
        f"{n}={'|'.join(sorted(v))}" for n, v in values.items()) or "-"}
        for (path, kernel), values in sorted(found.items())]


def _pct(part: float, whole: float) -> str:
    return "-" if not whole else f"{part / whole * 100:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def replay_sections(replays: Sequence[ReplayReport]) -> list[Section]:
    source = Section("Source distribution (workload replay)")
    reasons = Section("Failure-reason distribution")
    if not replays:
        source.blocks.append("No workload was replayed (pass --workload).")
        reasons.blocks.append("No workload was replayed.")
        return [source, reasons]
    source.blocks.append("Each trace op's calls are split evenly over its shape variants; "
                         "misses add no latency. Counts are calls (unique shapes).")
    source.blocks.append(Table(
        [("workload", "workload"), ("total", "modelled latency (us)"), ("calls", "calls"),
         *[(s, s) for s in SOURCES], ("zero", "of MEASURED: zero-cost"),
         ("filled", "dtype-filled tensors")],
        [{"workload": r.workload, "total": f"{r.total_latency_us:.1f}", "calls": r.calls,
          **{s: f"{r.source_by_calls[s]} ({r.source_by_shapes[s]}) "
                f"{_pct(r.source_by_calls[s], r.calls)}" for s in SOURCES},
          "zero": r.zero_cost_calls,
          "filled": f"{r.filled_dtypes['tensors']} in {r.filled_dtypes['variants']} variants"}
         for r in replays]))
    unmapped = [f"{r.workload}: " + ", ".join(f"{u['op']} ({u['calls']} calls)"
                                              for u in r.unmapped_ops)
                for r in replays if r.unmapped_ops]
    source.blocks.append("Unmapped ops: " + ("; ".join(unmapped) if unmapped else "none."))
    table: Counter[tuple[str, str]] = Counter()
    for r in replays:
        for reason, n in r.miss_reasons_by_calls.items():
            table[(r.workload, reason)] += n
    reasons.blocks.append(Table(
        [("workload", "workload"), ("reason", "reason"), ("calls", "calls"),
         ("shapes", "unique shapes"), ("ops", "ops")],
        [{"workload": w, "reason": reason, "calls": n,
          "shapes": next(r.miss_reasons_by_shapes[reason] for r in replays if r.workload == w),
          "ops": ", ".join(o.op for r in replays if r.workload == w for o in r.ops
                           if reason in o.reasons)}
         for (w, reason), n in table.items()]))
    return [source, reasons]


def axes_section(store: Store, version: str, replays: Sequence[ReplayReport],
                 holdout: HoldoutReport | None) -> Section:
    profile = known_profile(store, version)
    with store.engine.connect() as conn:
        counts = points_per_path(conn, profile.id)
    used: Counter = Counter()
    for r in replays:
        for u in r.interpolation:
            used[(u["path"], u["method"], ",".join(u["axes"]))] += u["calls"]
    section = Section("Interpolation axes and dimensions")
    section.blocks.append(Table(
        [("path", "path"), ("axes", "axes"), ("groups", "axis groups (low dimension first)"),
         ("ceiling", "ceiling"), ("points", "points in version"), ("holdout", "hold-out methods")],
        [{"path": p.name, "axes": ", ".join(p.axis_names),
          "groups": " → ".join("+".join(p.axis_names[i] for i in g) for g in p.axis_groups),
          "ceiling": p.ceiling, "points": counts.get(p.name, 0),
          "holdout": _methods(holdout, p.name)} for p in ALL_PATHS]))
    section.blocks.append(Table(
        [("path", "path"), ("method", "method"), ("axes", "axes used"), ("calls", "calls")],
        [{"path": p, "method": m, "axes": a or "-", "calls": n}
         for (p, m, a), n in sorted(used.items(), key=lambda kv: (-kv[1], kv[0]))])
        if used else "No workload call was answered by interpolation.")
    return section


def _methods(holdout: HoldoutReport | None, path: str) -> str:
    stats = next((s for s in holdout.paths if s.path == path), None) if holdout else None
    return ", ".join(f"{m} {n}" for m, n in stats.methods.items()) if stats else "-"


HOLDOUT_COLUMNS = [
    ("path", "path"), ("kernel", "kernel"), ("regimes", "regimes"), ("points", "points"),
    ("boundary", "hull boundary (answered)"), ("eligible", "eligible"),
    ("coverage", "answered (coverage)"), ("ape", "interp. APE median / p90 / max %"),
    ("nn", "nearest APE median / p90 / max %"), ("misses", "miss reasons")]


def holdout_rows(stats: Sequence[Any]) -> list[dict[str, Any]]:
    return [{"path": s.path, "kernel": s.kernel, "regimes": s.regimes, "points": s.points,
             "boundary": f"{s.boundary} ({s.boundary_answered})", "eligible": s.eligible,
             "coverage": f"{s.answered} ({_pct(s.answered, s.eligible)})",
             "ape": " / ".join(_num(s.ape[k]) for k in ("median", "p90", "max")),
             "nn": " / ".join(_num(s.nn_ape[k]) for k in ("median", "p90", "max")),
             "misses": ", ".join(f"{r} {n}" for r, n in s.miss_reasons.items()) or "-"}
            for s in stats]


def holdout_section(holdout: HoldoutReport | None) -> Section:
    section = Section("Hold-out error statistics")
    if holdout is None:
        section.blocks.append("Hold-out was not run.")
        return section
    section.blocks.append(
        "Leave-one-out over every measured coordinate (all rows at the coordinate hidden), "
        "asked through the engine's exact + interpolation code. Hull-boundary points cannot "
        "be answered without extrapolation and are counted apart; the nearest-neighbour "
        "baseline copies the closest other coordinate of the same regime, on the same points.")
    section.blocks.append(Table(HOLDOUT_COLUMNS, holdout_rows(holdout.paths)))
    section.blocks.append(Table(HOLDOUT_COLUMNS, holdout_rows(
        [s for s in holdout.groups if s.eligible])))
    return section


def unverified_section(scope: dict[str, Any], holdout: HoldoutReport | None) -> Section:
    section = Section("Unverified scope")
    section.blocks.append(
        "Per RFC §7.3/§8.3: without hold-out, B2B or profiling ground truth a path is only "
        "shown to be executable. Below: mapped paths without data in this version, "
        "registered paths without points, and the subtype values the data does cover.")
    section.blocks.append(Table(
        [("selector", "selector"), ("kernel", "kernel"), ("path", "path"),
         ("status", "status"), ("refusals", "row refusals"), ("ops", "mapping ops")],
        scope["gaps"]) if scope["gaps"] else "Every routed kernel has points.")
    idle = ", ".join(scope["paths_without_points"]) or "none"
    section.blocks.append(f"Registered paths with no points in this version: {idle}.")
    if holdout is not None:
        unanswered = [s.path for s in holdout.paths if s.eligible and not s.answered]
        untested = [s.path for s in holdout.paths if not s.eligible]
        section.blocks.append("Paths with points but no answered hold-out point: "
                              f"{', '.join(unanswered) or 'none'}; paths with no interior "
                              f"point to hold out: {', '.join(untested) or 'none'}.")
    section.blocks.append(Table([("path", "path"), ("kernel", "kernel"),
                                 ("covered", "regime values present"),
                                 ("ops", "mapping ops routed here")],
                                scope["subtype_coverage"]) if scope["subtype_coverage"]
                          else "No specialised path has points in this version.")
    return section


@dataclass
class ReportInputs:
    """What a report is built from: the store and version, and the evaluations run."""

    store: Store
    version: str
    replays: list[ReplayReport]
    holdout: HoldoutReport | None
    interpolation: bool = True
    overlay: str | None = None
    images: bool = False
    database: str | None = None


def build_sections(inputs: ReportInputs) -> list[Section]:
    """Every section of the minimal report, in RFC §7.3 order."""
    store, version = inputs.store, inputs.version
    head = Section("Software and data")
    info = {**software_info(), **data_info(store, version, inputs.database)}
    head.blocks.append(Table([("key", "field"), ("value", "value")],
                             [{"key": k, "value": v} for k, v in info.items()]))
    config = Section("Enabled configuration")
    config.blocks.append(f"Interpolation: {'on' if inputs.interpolation else 'off'}; "
                         f"mapping overlay: {inputs.overlay or 'none'}.")
    config.blocks.append(Table(
        [("kernel_type", "kernel"), ("max_interpolation_dim", "max_interpolation_dim"),
         ("ceilings", "effective ceiling per path"), ("generic_axis", "generic axis"),
         ("axis_transform", "axis transform"), ("prefer_profiling_rows", "prefer profiling"),
         ("core_envelope_ratio", "core envelope ratio"),
         ("require_semantic_unique", "semantic unique")], policies(store, version)))
    source, reasons = replay_sections(inputs.replays)
    sections = [head, config, source, axes_section(store, version, inputs.replays,
                                                   inputs.holdout),
                holdout_section(inputs.holdout), reasons,
                unverified_section(unverified_scope(store, version), inputs.holdout)]
    if inputs.images:
        _add_images(sections, inputs)
    return sections


def _add_images(sections: list[Section], inputs: ReportInputs) -> None:
    from profstore.evaluation.plot import holdout_png, source_distribution_png

    if inputs.replays:
        sections[2].blocks.append(Image("share of calls by source, per workload",
                                        source_distribution_png(inputs.replays)))
    if inputs.holdout is not None and inputs.holdout.points:
        sections[4].blocks.append(Image("hold-out |error| %: interpolation (solid) vs "
                                        "nearest neighbour (dashed)",
                                        holdout_png(inputs.holdout)))
