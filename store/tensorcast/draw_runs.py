"""``profstore tensorcast throughput-optimizer --draws K``: the search, then K more in which
every answer is multiplied by its draw (``draws``); which configuration wins in each.

Each search is upstream's own command run by ``commands.run`` (all its processes draw
alike: the draw travels in ``Settings``). The ranking is read through upstream's own
objects: while a search runs, ``OptimizerSummary.report_final_result`` (the call that
prints the result table) is wrapped to keep the summary's ranked rows, one best row per
parallel configuration, best throughput first (docs/adr/0008-decision-draws.md). The
draws' own output (upstream's table, K times) is not shown.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

from profstore.tensorcast.commands import CommandRequest, CommandResult, run
from profstore.tensorcast.draw_report import DrawReport, Ranked, build_report
from profstore.tensorcast.draw_spec import DrawSpec, check_fallback_error
from profstore.tensorcast.upstream import UpstreamError, command_module

COMMAND = "throughput-optimizer"
OTHER_SEARCHES = ("--disagg", "--enable-optimize-prefill-decode-ratio")
"""Upstream modes whose result is not one ranked table (refused with ``--draws``)."""


@dataclass(frozen=True)
class DrawRequest:
    """``k`` draws from ``seed``; ``fallback_error``: F, or None (analytic answers exact)."""

    k: int
    seed: int = 0
    fallback_error: float | None = None


def check_request(command: str, upstream_args: tuple[str, ...], draws: DrawRequest) -> None:
    """``ValueError`` / ``UpstreamError`` for a request that cannot draw (before any run)."""
    if command != COMMAND:
        raise ValueError(f"--draws goes with {COMMAND} (its answer is a decision), "
                         f"not {command}")
    if draws.k <= 0:
        raise ValueError(f"--draws must be a positive number of searches, got {draws.k}")
    check_fallback_error(draws.fallback_error)
    for word in upstream_args:
        name = word.split("=", 1)[0]
        if len(name) > 4 and any(o.startswith(name) for o in OTHER_SEARCHES):
            raise UpstreamError(f"--draws needs the aggregated search's one ranked table; "
                                f"{name} gives another")


def run_with_draws(request: CommandRequest, draws: DrawRequest
                   ) -> tuple[CommandResult, DrawReport]:
    """The nominal search (output as usual), then the K draws; the report of both."""
    check_request(request.command, request.upstream_args, draws)
    command_module(request.command, request.tensorcast_root)  # upstream importable
    spec = DrawSpec(draws.seed, None, draws.fallback_error)
    start = perf_counter()
    with ranked_tables() as tables:
        nominal = run(replace(request, settings=replace(request.settings, draw=spec),
                              stats_json=None))
    nominal_seconds = perf_counter() - start
    if nominal.exit_code != 0:
        raise UpstreamError(f"TensorCast's search exited {nominal.exit_code}: no draws")
    nominal_table = _one_table(tables)
    quiet = replace(request, stats_json=None, fallbacks=None, compare_table=None,
                    settings=replace(request.settings, compare_dir=None))
    drawn: list[list[Ranked]] = []
    start = perf_counter()
    for index in range(draws.k):
        settings = replace(quiet.settings, draw=replace(spec, index=index))
        with ranked_tables() as tables, contextlib.redirect_stdout(io.StringIO()):
            result = run(replace(quiet, settings=settings))
        if result.exit_code != 0:
            raise UpstreamError(f"draw {index}: TensorCast's search exited {result.exit_code}")
        drawn.append(_one_table(tables))
    report = build_report(draws.k, draws.seed, draws.fallback_error, nominal_table, drawn,
                          nominal.models or [], nominal_seconds, perf_counter() - start)
    if request.stats_json:
        write_stats(request.stats_json, nominal, report)
    return nominal, report


def _one_table(tables: list[list[Ranked]]) -> list[Ranked]:
    if len(tables) != 1:
        raise UpstreamError(f"--draws needs one ranked table per search, TensorCast printed "
                            f"{len(tables)} (one device, the aggregated search)")
    return tables[0]


@contextlib.contextmanager
def ranked_tables() -> Iterator[list[list[Ranked]]]:
    """The ranked rows of every result table upstream reports while the block runs."""
    from serving_cast.service.optimizer_summary import OptimizerSummary

    original = OptimizerSummary.__dict__["report_final_result"]
    found: list[list[Ranked]] = []

    def report_final_result(self: Any, args: Any, silent: bool = False) -> Any:
        found.append(ranked_rows(self, args))
        return original(self, args, silent)

    OptimizerSummary.report_final_result = report_final_result
    try:
        yield found
    finally:
        OptimizerSummary.report_final_result = original


def ranked_rows(summary: Any, args: Any) -> list[Ranked]:
    """Upstream's ranking of one summary: the best row per parallel configuration within
    the latency limits, best throughput first (empty when nothing passed)."""
    if summary.get_summary_df() is None or summary.get_summary_df().empty:
        return []
    if summary._is_pd_ratio_mode() or isinstance(args.input_length, str):
        raise UpstreamError("--draws needs the aggregated search's ranked table")
    table = summary._prepare_agg_disagg_results()
    return [Ranked(str(row["parallel"]), float(row["token/s"]), int(row["batch_size"]))
            for _, row in table.iterrows()]


def write_stats(path: str, nominal: CommandResult, report: DrawReport) -> None:
    """The nominal search's summary, with the draws under ``"draws"`` (``--stats-json``)."""
    import json
    from pathlib import Path

    from profstore.tensorcast import summary

    data = summary.to_json(nominal.summary, nominal.timing)
    data["draws"] = report.to_json()
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
