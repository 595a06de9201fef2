"""Insight verbs: ``gaps`` (what to profile next), ``diff`` (what changed between versions)
and ``calibrate`` (is the replay interval honest); ``replay --interval`` prints through
``print_interval`` here."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from profstore.cli.common import CliError
from profstore.cli.lookup_cmd import open_store
from profstore.cli.output import print_json, print_table
from profstore.evaluation.calibration import calibrate as run_calibration
from profstore.evaluation.diff import DiffReport, diff_versions
from profstore.evaluation.fallback_prices import lines_of
from profstore.evaluation.gaps import Coverage, GapReport, plan_gaps
from profstore.evaluation.plot import PlotError
from profstore.evaluation.uncertainty import (
    ErrorModel,
    Interval,
    default_cache_dir,
    describe_levels,
    interval,
    op_errors,
)
from profstore.evaluation.workload import Workload, load_workload, run_workload
from profstore.ingest.profiling_folders import BASE_HEADER
from profstore.presentation.text_table import Column

PROFILER_COLUMNS = ["Type", *(c for c in BASE_HEADER if c.startswith(("Input", "Output")))]
PLAN_COLUMNS = ["plan_id", "role", "opens_new_regime", "regime", "serves"]
SHAPE_CELLS = ("Input Shapes", "Output Shapes")


def _workload(args: argparse.Namespace, path: str) -> Workload:
    try:
        return load_workload(path, num_devices=args.num_devices, ep_size=args.ep_size)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def gaps(args: argparse.Namespace) -> int:
    if args.budget is not None and args.budget <= 0:
        raise CliError(f"--budget must be a positive number of shapes, got {args.budget}")
    workload = _workload(args, args.workload)
    with open_store(args) as store:
        report = plan_gaps(store, workload, args.version, budget=args.budget)
    if args.output:
        Path(args.output).write_text(plan_csv(report), encoding="utf-8")
        print(f"wrote {len(report.plan)} shapes to {args.output}", file=sys.stderr)
    if args.json:
        print_json(report.to_dict())
    else:
        print_gaps(report)
    return 0


def plan_csv(report: GapReport) -> str:
    """The plan in the profiler's input columns (shape cells quoted as the profiler writes
    them), then the plan's own columns."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(PROFILER_COLUMNS + PLAN_COLUMNS)
    for p in report.plan:
        cells = {"Type": p.kernel, **p.cells}
        row = [f'"{cells[c]}"' if c in SHAPE_CELLS else cells.get(c, "")
               for c in PROFILER_COLUMNS]
        serves = sorted({report.gaps[g].op for g in p.serves})
        writer.writerow(row + [p.id, p.role, "yes" if p.opens_new_regime else "no",
                               p.regime_key, ";".join(serves)])
    return out.getvalue()


def _coverage_line(label: str, c: Coverage) -> str:
    return (f"{label}: calls {c.calls:.1%} covered ({c.measured_calls:.1%} measured), time "
            f"{c.time:.1%} covered ({c.measured_time:.1%} measured) of {c.total_time_us:.1f} us")


def print_gaps(report: GapReport) -> None:
    print(f"{report.workload} on {report.version}: {len(report.gaps)} gap shapes, "
          f"{len(report.groups)} kernel regimes, {len(report.plan)} shapes planned"
          + (f" (budget {report.budget})" if report.budget else ""))
    print(_coverage_line("  before", report.before))
    if report.after is not None:
        print(_coverage_line("  after ", report.after)
              + f"; {report.covered_after} gap shapes now answered")
    rows = [{"kernel": g.kernel, "path": g.path, "new": g.opens_new_regime, "calls": g.calls,
             "time": round(g.time_us, 1), "share": f"{g.share:.1%}",
             "regime": g.regime_key} for g in report.groups]
    print_table(rows, [Column("kernel", "KERNEL"), Column("path", "PATH"),
                       Column("new", "NEW REGIME"), Column("calls", "CALLS", True),
                       Column("time", "TIME_US", True), Column("share", "SHARE", True),
                       Column("regime", "REGIME", clip=70)], title="\ngaps by kernel and regime")
    rows = [{"op": g.op, "calls": g.calls, "source": g.source, "reason": g.reason,
             "estimate": g.estimate, "time": round(g.time_us, 1), "why": g.not_planned}
            for g in report.gaps if g.not_planned]
    print_table(rows, [Column("op", "OP", clip=45), Column("calls", "CALLS", True),
                       Column("reason", "REASON"), Column("estimate", "ESTIMATE"),
                       Column("time", "TIME_US", True), Column("why", "NOT PLANNED", clip=60)],
                title="\ngaps no shape can close", empty="none")
    rows = [{"id": p.id, "kernel": p.kernel, "role": p.role, "new": p.opens_new_regime,
             "shapes": p.cells["Input Shapes"], "dtypes": p.cells["Input Data Types"],
             "serves": ", ".join(sorted({report.gaps[g].op for g in p.serves}))}
            for p in report.plan]
    print_table(rows, [Column("id", "#", True), Column("kernel", "KERNEL"),
                       Column("role", "ROLE"), Column("new", "OPENS NEW REGIME"),
                       Column("shapes", "INPUT SHAPES", clip=50),
                       Column("dtypes", "INPUT DATA TYPES", clip=30),
                       Column("serves", "FOR", clip=50)], title="\nprofiling plan",
                empty="nothing to plan")
    prices = lines_of(report.fallback_prices, "estimate")
    if prices:
        print("\n" + "\n".join(prices))


def diff(args: argparse.Namespace) -> int:
    workloads = [_workload(args, w) for w in args.workload]
    with ExitStack() as stack:
        args.version = args.from_version
        store_a = stack.enter_context(open_store(args))
        store_b = store_a
        if args.db_b or store_a.profile(args.to_version) is None:
            other = argparse.Namespace(**{**vars(args), "db": args.db_b or args.db,
                                          "version": args.to_version})
            store_b = stack.enter_context(open_store(other))
        report = diff_versions(store_a, args.from_version, store_b, args.to_version, workloads)
    if args.plot:
        from profstore.evaluation.plot import ratio_figure

        try:
            Path(args.plot).write_bytes(ratio_figure(report))
        except PlotError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json(report.to_dict())
    else:
        print_diff(report, args.regimes)
    return 0


def _ratio_cells(r: Any) -> dict[str, Any]:
    if r is None or r.median is None:
        return {"coords": 0}
    return {"coords": r.coordinates, "median": round(r.median, 4), "p10": round(r.p10, 4),
            "p90": round(r.p90, 4), "worst": round(r.worst[0]["ratio"], 4)}


RATIO_COLUMNS = [Column("coords", "SHARED", True), Column("median", "MEDIAN", True),
                 Column("p10", "P10", True), Column("p90", "P90", True),
                 Column("worst", "WORST", True)]


def print_diff(report: DiffReport, regimes: bool = False) -> None:
    print(report.headline())
    rows = [{"kernel": k.kernel, "presence": k.presence, "both": k.regimes_both,
             "only_from": k.regimes_only_from, "only_to": k.regimes_only_to,
             **_ratio_cells(k.ratios)} for k in report.kernels]
    print_table(rows, [Column("kernel", "KERNEL", clip=36), Column("presence", "IN"),
                       Column("both", "REGIMES BOTH", True),
                       Column("only_from", f"ONLY {report.from_version}".upper(), True),
                       Column("only_to", f"ONLY {report.to_version}".upper(), True),
                       *RATIO_COLUMNS], title="\nper kernel")
    if regimes:
        rows = [{"kernel": r.kernel, "path": r.path, "presence": r.presence,
                 "regime": r.regime_key, **_ratio_cells(r.ratios)} for r in report.regimes]
        print_table(rows, [Column("kernel", "KERNEL", clip=30), Column("path", "PATH"),
                           Column("presence", "IN"), *RATIO_COLUMNS,
                           Column("regime", "REGIME", clip=60)], title="\nper regime")
    rows = [{"op": c.op, "change": c.change, "before": c.before, "after": c.after}
            for c in report.mapping_changes]
    print_table(rows, [Column("op", "OP", clip=50), Column("change", "CHANGE"),
                       Column("before", report.from_version.upper(), clip=30),
                       Column("after", report.to_version.upper(), clip=30)],
                title="\nmapping changes", empty="none")
    for w in report.workloads:
        print(f"\n{w.workload}: {w.total_from_us:.1f} us -> {w.total_to_us:.1f} us "
              f"(answered calls {w.answered_from} -> {w.answered_to}; over the "
              f"{w.common_variants} shapes answered in both {w.common_from_us:.1f} -> "
              f"{w.common_to_us:.1f} us)")
        print_table(w.ops, [Column("op", "OP", clip=50), Column("from_us", "FROM_US", True),
                            Column("to_us", "TO_US", True), Column("delta_us", "DELTA_US", True)],
                    title="  ops that moved it most", empty="  no op moved")


def replay_interval(store: Any, args: argparse.Namespace) -> Interval:
    """The interval of ``replay --interval`` (error model cached per version)."""
    workload = _workload(args, args.workload)
    run = run_workload(store, workload, args.version,
                       interpolation=not args.disable_profiling_interpolation)
    cache = None if args.no_error_cache else default_cache_dir()
    model = ErrorModel(store, args.version, cache)
    return interval(op_errors(run.answers, model), draws=args.draws)


def print_interval(found: Interval) -> None:
    i, c = found.independent, found.correlated
    print(f"\nanswered total {found.total_us:.1f} us; p10-p90 independent "
          f"[{i.p10:.1f}, {i.p90:.1f}], fully correlated [{c.p10:.1f}, {c.p90:.1f}] "
          f"({found.draws} draws; {found.uncertain_variants} of {found.answered_variants} "
          f"answered shapes uncertain; error sources: {describe_levels(found.levels)})")
    rows = [{**d, "variance_share": f"{d['variance_share']:.1%}"} for d in found.dominant]
    print_table(rows, [Column("op", "OP", clip=48), Column("index", "#", True),
                       Column("calls", "CALLS", True), Column("latency_us", "LATENCY_US", True),
                       Column("source", "SOURCE"), Column("level", "ERRORS FROM"),
                       Column("errors", "N", True), Column("variance_share", "VARIANCE", True)],
                title="ops that dominate the uncertainty", empty="none")


def calibrate(args: argparse.Namespace) -> int:
    workload = _workload(args, args.workload)
    with open_store(args) as store:
        try:
            result = run_calibration(store, workload, args.version, share=args.share,
                                     trials=args.trials, seed=args.seed,
                                     model=ErrorModel(store, args.version, default_cache_dir()))
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json(result.to_dict())
        return 0
    data = result.to_dict()
    print(f"{result.workload} on {result.version}: {len(result.trials)} trials hiding "
          f"{result.share:.0%} of the rows; {data['informative_trials']} left something "
          "interpolated")
    for bound in ("independent", "correlated"):
        value = data[f"coverage_{bound}"]
        print(f"  truth inside the p10-p90 {bound} interval: "
              + ("-" if value is None else f"{value:.0%}") + " of informative trials")
    return 0
