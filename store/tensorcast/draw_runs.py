"""``profstore tensorcast throughput-optimizer --draws K``: the search, then K more in which
every answer is multiplied by its draw (``draws``); which configuration wins in each.

Each search is upstream's own command run by ``commands.run`` (all its processes draw
alike: the draw travels in ``Settings``). The ranking is upstream's own ranked table
(``ranking``). The draws' own output (upstream's table, K times) is not shown.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, replace
from time import perf_counter

from profstore.tensorcast import analytic_check
from profstore.tensorcast.commands import CommandRequest, CommandResult, run
from profstore.tensorcast.draw_report import DrawReport, build_report
from profstore.tensorcast.draw_spec import DrawSpec, FallbackErrors, check_fallback_error
from profstore.tensorcast.drawn_source import ModelRecord
from profstore.tensorcast.draws import errors_from_check, fallback_error
from profstore.tensorcast.ranking import Ranked, ranked_tables
from profstore.tensorcast.settings import Settings
from profstore.tensorcast.upstream import UpstreamError, command_module

COMMAND = "throughput-optimizer"
OTHER_SEARCHES = ("--disagg", "--enable-optimize-prefill-decode-ratio")
"""Upstream modes whose result is not one ranked table (refused with ``--draws``)."""


@dataclass(frozen=True)
class DrawRequest:
    """``k`` draws from ``seed``; ``fallback_error``: F (0: the analytic answers exact), or
    None (their errors from the analytic check)."""

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
    spec = DrawSpec(draws.seed, None, FallbackErrors.of(draws.fallback_error))
    start = perf_counter()
    with ranked_tables() as tables:
        nominal = run(replace(request, settings=replace(request.settings, draw=spec),
                              stats_json=None))
    nominal_seconds = perf_counter() - start
    if nominal.exit_code != 0:
        raise UpstreamError(f"TensorCast's search exited {nominal.exit_code}: no draws")
    nominal_table = _one_table(tables)
    spec = replace(spec, fallback=fallback_errors(spec.fallback, nominal, request.settings))
    models = with_fallback_errors(nominal.models or [], spec.fallback)
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
    report = build_report(draws.k, draws.seed, spec.fallback, nominal_table, drawn,
                          models, nominal_seconds, perf_counter() - start)
    if request.stats_json:
        write_stats(request.stats_json, nominal, report)
    return nominal, report


def fallback_errors(base: FallbackErrors, nominal: CommandResult,
                    settings: Settings) -> FallbackErrors:
    """The draws' fallback errors: as stated, or from the nominal search's analytic check
    (a calibrated fallback's class draws its leave-one-out multipliers)."""
    if base.source != "calibration":
        return base
    found = analytic_check.check(analytic_check.observations(nominal.summary.models()))
    return errors_from_check(found, set(settings.calibration or {}))


def with_fallback_errors(models: list[ModelRecord], errors: FallbackErrors
                         ) -> list[ModelRecord]:
    """The nominal models with each analytic answer's error source and variance as the
    draws will draw them (the nominal search ran before they were known)."""
    for model in models:
        for op in model.ops.values():
            if op.source == "ANALYTIC":
                op.level, op.variance = fallback_error(errors, op.kernel)
    return models


def _one_table(tables: list[list[Ranked]]) -> list[Ranked]:
    if len(tables) != 1:
        raise UpstreamError(f"--draws needs one ranked table per search, TensorCast printed "
                            f"{len(tables)} (one device, the aggregated search)")
    return tables[0]


def write_stats(path: str, nominal: CommandResult, report: DrawReport) -> None:
    """The nominal search's summary, with the draws under ``"draws"`` (``--stats-json``)."""
    import json
    from pathlib import Path

    from profstore.tensorcast import summary

    data = summary.to_json(nominal.summary, nominal.timing, nominal.best)
    data["draws"] = report.to_json()
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
