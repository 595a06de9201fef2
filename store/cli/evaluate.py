"""Evaluation verbs: ``replay``, ``holdout``, ``report`` and ``plot``.

They answer "for my database and my workload, what was measured, what was interpolated,
how good is the interpolation, and what is missing" (RFC §7.3, §8.3).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profstore.cli.common import CliError, db_url
from profstore.cli.lookup_cmd import open_store
from profstore.cli.output import ProgressBar, print_json, print_table
from profstore.cli.regime_option import checked_regime_policy
from profstore.evaluation.document import render_html, render_markdown
from profstore.evaluation.fallback_prices import lines_of
from profstore.evaluation.holdout import HoldoutReport, run_holdout
from profstore.evaluation.holdout_comm import METHODS as COMM_METHODS
from profstore.evaluation.plot import PlotError, choose_regime, holdout_png, regime_plot
from profstore.evaluation.replay import SOURCES, ReplayReport, replay_workload
from profstore.evaluation.report import HOLDOUT_COLUMNS, ReportInputs, build_sections, holdout_rows
from profstore.presentation.text_table import Column, to_json

OP_COLUMNS = [Column("op", "OP", clip=48), Column("calls", "CALLS", True),
              Column("unique_shapes", "SHAPES", True), Column("latency_us", "LATENCY_US", True),
              Column("share", "SHARE", True), Column("source", "SOURCE"),
              Column("reasons", "MISS REASONS", clip=50)]


def replay(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        try:
            result = replay_workload(
                store, args.workload, args.version,
                interpolation=not args.disable_profiling_interpolation,
                num_devices=args.num_devices, ep_size=args.ep_size,
                progress=ProgressBar("replay", "shapes"),
                regime_policy=checked_regime_policy(args, store))
        except ValueError as exc:
            raise CliError(str(exc)) from None
        found = None
        if args.interval:
            from profstore.cli.insight import replay_interval

            found = replay_interval(store, args)
    if args.json:
        data = result.to_dict()
        if not args.variants:
            data.pop("variants")
        if found is not None:
            data["interval"] = found.to_dict()
        print_json(data)
        return 0
    print_replay(result, args.variants)
    if found is not None:
        from profstore.cli.insight import print_interval

        print_interval(found)
    return 0


def print_replay(result: ReplayReport, variants: bool = False) -> None:
    print(f"{result.workload} on {result.version}: modelled latency "
          f"{result.total_latency_us:.1f} us over {result.calls} calls "
          f"({result.unique_shapes} unique shapes, {len(result.ops)} ops)")
    total = result.total_latency_us or 1.0
    rows = [{"op": r.op, "calls": r.calls, "unique_shapes": r.unique_shapes,
             "latency_us": round(r.latency_us, 3), "share": f"{r.latency_us / total:.1%}",
             "source": r.source if r.source != "mixed" else _counts(r.sources),
             "reasons": _counts(r.reasons) or None} for r in result.ops]
    print_table(rows, OP_COLUMNS, title="\nper op")
    dist = [{"source": s, "calls": result.source_by_calls[s],
             "share": f"{result.source_by_calls[s] / max(result.calls, 1):.1%}",
             "shapes": result.source_by_shapes[s],
             "latency_us": round(result.latency_by_source[s], 3)} for s in SOURCES]
    print_table(dist, [Column("source", "SOURCE"), Column("calls", "CALLS", True),
                       Column("share", "SHARE", True), Column("shapes", "SHAPES", True),
                       Column("latency_us", "LATENCY_US", True)], title="\nsources")
    prices = lines_of(result.fallback_prices, "trace")
    if prices:
        print("\n" + "\n".join(prices))
    print(f"  (MEASURED includes {result.zero_cost_calls} calls answered 0 by zero_cost / "
          "accepted_miss mapping entries)")
    reasons = [{"reason": k, "calls": v, "shapes": result.miss_reasons_by_shapes[k]}
               for k, v in result.miss_reasons_by_calls.items()]
    print_table(reasons, [Column("reason", "REASON"), Column("calls", "CALLS", True),
                          Column("shapes", "SHAPES", True)], title="\nmiss reasons",
                empty="no misses")
    print_table(result.unmapped_ops, [Column("op", "OP"), Column("calls", "CALLS", True),
                                      Column("unique_shapes", "SHAPES", True)],
                title="\nunmapped ops", empty="none")
    filled = result.filled_dtypes
    print(f"\ndtypes the trace omits, filled with {filled['dtype']}: {filled['tensors']} "
          f"tensors in {filled['variants']} variants ({filled['calls']} calls)")
    if variants:
        print_table([v.__dict__ for v in result.variants],
                    [Column("op", "OP", clip=40), Column("index", "#", True),
                     Column("calls", "CALLS", True), Column("shapes", "SHAPES", clip=60),
                     Column("latency_us", "LATENCY_US", True), Column("source", "SOURCE"),
                     Column("reason", "REASON"), Column("method", "METHOD")],
                    title="\nvariants")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def holdout(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        result = run_holdout(store, args.version, kernel=args.kernel, path=args.path,
                             progress=ProgressBar("hold-out", "points"))
        if args.plot:
            _write_plot(args.plot, result)
    if args.json:
        data = result.to_dict()
        if not args.points:
            data.pop("points")
        print_json(data)
        return 0
    columns = [Column(k, t.upper(), k in ("regimes", "points", "eligible"))
               for k, t in HOLDOUT_COLUMNS]
    print_table(holdout_rows(result.paths), columns, title="per path", empty="no points")
    print_table(holdout_rows(result.groups), columns, title="\nper path and kernel",
                empty="no points")
    if result.communication:
        comm = [Column("collective", "COLLECTIVE"), Column("groups", "GROUPS", True),
                Column("scored", "SIZES SCORED", True)] + [
            Column(m, f"{m.upper()} APE median / p90 / max %") for m in COMM_METHODS]
        print_table([{"collective": c.collective, "groups": c.groups, "scored": c.scored,
                      **{m: " / ".join(_pct_text(c.ape[m][k]) for k in ("median", "p90", "max"))
                         for m in COMM_METHODS}} for c in result.communication], comm,
                    title="\ncommunication (leave-one-out per message size)")
    if result.skipped_paths:
        print(f"\npaths stored but no longer registered (re-ingest): "
              f"{', '.join(result.skipped_paths)}")
    return 0


def _pct_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _write_plot(target: str, result: HoldoutReport) -> None:
    try:
        Path(target).write_bytes(holdout_png(result))
    except PlotError as exc:
        raise CliError(str(exc)) from None


def report(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        interpolation = not args.disable_profiling_interpolation
        replays = [replay_workload(store, w, args.version, interpolation=interpolation,
                                   num_devices=args.num_devices, ep_size=args.ep_size,
                                   progress=ProgressBar(f"replay {Path(w).stem}", "shapes"))
                   for w in args.workload]
        held = None if args.no_holdout else run_holdout(
            store, args.version, kernel=args.kernel, path=args.path,
            progress=ProgressBar("hold-out", "points"))
        inputs = ReportInputs(store, args.version, replays, held, interpolation,
                              args.mapping_overlay, images=args.format == "html",
                              database=db_url(args))
        try:
            sections = build_sections(inputs)
        except PlotError as exc:
            raise CliError(str(exc)) from None
    title = f"profstore evaluation report — {args.version}"
    text = (render_html if args.format == "html" else render_markdown)(title, sections)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def plot(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        try:
            choice = choose_regime(store, args.version, args.kernel, args.path, args.regime)
            summary = regime_plot(store, args.version, choice, args.output)
        except PlotError as exc:
            raise CliError(str(exc)) from None
    print(to_json(summary))
    return 0
