"""``profstore tensorcast COMMAND ... -- UPSTREAM_ARGS``: TensorCast's own command, run
unchanged, with profstore as its profiling data source in every process.

The upstream arguments go to upstream's own parser (``--performance-model profiling`` and
the profiling-database option are added here: naming either is an error that points at
``--db``); then upstream's ``main()`` runs with ``worker`` as the main module, so that every
worker it spawns installs profstore too. Each process writes its statistics to a temporary
folder; the summary is printed (stderr) and written as asked.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter
from types import ModuleType
from typing import TYPE_CHECKING

from profstore.tensorcast import installation as installer
from profstore.tensorcast import own_objects
from profstore.tensorcast import summary as report
from profstore.tensorcast.ranking import Ranked, ranked_tables
from profstore.tensorcast.run_stats import RunSummary
from profstore.tensorcast.settings import Settings
from profstore.tensorcast.stores import close_shared
from profstore.tensorcast.upstream import UpstreamError, command_module

if TYPE_CHECKING:
    from profstore.tensorcast.compare import CompareCounts
    from profstore.tensorcast.draws.source import ModelRecord

SEARCH = "throughput-optimizer"
"""The command whose result is a ranked table of configurations."""
RESERVED = ("--performance-model", "--profiling-database-path", "--profiling-database")
"""Upstream options this command sets itself."""


@dataclass(frozen=True)
class CommandRequest:
    """One ``profstore tensorcast`` invocation."""

    command: str
    settings: Settings
    upstream_args: tuple[str, ...]
    tensorcast_root: str | None = None
    stats_json: str | None = None
    fallbacks: str | None = None
    compare_table: str | None = None


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    summary: RunSummary
    timing: report.Timing
    compared: CompareCounts | None = None
    models: list[ModelRecord] | None = None
    """With ``settings.draw``: the ops each model priced (``draws.source``)."""
    best: Ranked | None = None
    """The throughput search's best configuration (upstream's ranked table's first row)."""


def check_arguments(args: Sequence[str]) -> None:
    """Refuse the options this command sets (and argparse abbreviations of them)."""
    for word in args:
        name = word.split("=", 1)[0]
        if name.startswith("--") and len(name) > 6 and any(r.startswith(name) for r in RESERVED):
            raise UpstreamError(f"{name}: profstore tensorcast sets the profiling model and its "
                                "database itself; name the database with --db")


def run(request: CommandRequest) -> CommandResult:
    """Run the command; ``UpstreamError`` / ``ValueError`` before anything ran."""
    check_arguments(request.upstream_args)
    installer.check(request.settings)  # the store, the version, context and policy first
    own_objects.set_aside()  # before TensorCast's first import (docs/adr/0128)
    module = command_module(request.command, request.tensorcast_root)
    argv = [request.command, *request.upstream_args, "--performance-model", "profiling",
            "--profiling-database-path", request.settings.db]
    _parse_like_upstream(module, argv)
    with tempfile.TemporaryDirectory(prefix="profstore-tensorcast-") as run_dir:
        settings = replace(request.settings, run_dir=run_dir)
        # checked above (draw and calibration too); TensorCast's imports set aside (ADR 0129)
        installer.install_settings(settings, set_aside_imports=True)
        settings.to_environment()
        start = perf_counter()
        try:
            code, best = _run_ranked(request.command, module, argv)
        except Exception:
            errors = installer.recorder().stats.errors
            if errors:  # the store failed TensorCast: one line, not upstream's traceback
                raise UpstreamError(f"profstore could not serve TensorCast: {errors[0]}") from None
            raise
        finally:
            installer.uninstall()
            installer.recorder().close()
            close_shared()
        timing = report.Timing(perf_counter() - start)
        summary = RunSummary.collect(run_dir)
        models = None
        if settings.draw is not None:
            from profstore.tensorcast.draws.source import collect

            models = collect(run_dir)
        compared = None
        if settings.compare_dir is not None and request.compare_table:
            from profstore.tensorcast.compare import write_table

            compared = write_table(Path(run_dir), request.compare_table)
    _write_outputs(request, summary, timing, best)
    return CommandResult(code, summary, timing, compared, models, best)


def _run_ranked(command: str, module: ModuleType, argv: list[str]) -> tuple[int, Ranked | None]:
    """Upstream's ``main()``; for the throughput search, also its best configuration (None
    when it printed no single ranked table, or nothing met the limits)."""
    if command != SEARCH:
        return _run_main(module, argv), None
    with ranked_tables(strict=False) as tables:
        code = _run_main(module, argv)
    rows = tables[0] if len(tables) == 1 else []
    return code, rows[0] if rows else None


def _parse_like_upstream(module: ModuleType, argv: list[str]) -> None:
    """Upstream's parser on the arguments, its error as one ``UpstreamError`` line."""
    captured = io.StringIO()
    try:
        with _argv(argv), contextlib.redirect_stderr(captured):
            module.arg_parse()
    except SystemExit as exc:
        if exc.code not in (0, None):
            lines = [line for line in captured.getvalue().splitlines() if line.strip()]
            raise UpstreamError("TensorCast refused its arguments: "
                                + (lines[-1] if lines else f"exit {exc.code}")) from None
        raise


def _run_main(module: ModuleType, argv: list[str]) -> int:
    worker = importlib.import_module("profstore.tensorcast.worker")
    main = sys.modules["__main__"]
    sys.modules["__main__"] = worker
    try:
        with _argv(argv):
            code = module.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.modules["__main__"] = main
    return int(code or 0)


@contextlib.contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def _write_outputs(request: CommandRequest, summary: RunSummary,
                   timing: report.Timing, best: Ranked | None) -> None:
    if request.stats_json:
        data = report.to_json(summary, timing, best)
        Path(request.stats_json).write_text(json.dumps(data, indent=2) + "\n",
                                            encoding="utf-8")
    if request.fallbacks:
        report.write_workload(summary, request.fallbacks)


def calibration_run(request: CommandRequest) -> CommandRequest:
    """``--calibrated-fallbacks`` without a saved run: the command once as measured (its
    output not shown, nothing written), and the request with the usable calibrations of
    that run's analytic check."""
    from profstore.tensorcast import analytic_check
    from profstore.tensorcast.calibrated import usable_calibrations

    plain = replace(request, stats_json=None, fallbacks=None, compare_table=None,
                    settings=replace(request.settings, compare_dir=None, calibration=None,
                                     draw=None))
    with contextlib.redirect_stdout(io.StringIO()):
        first = run(plain)
    if first.exit_code != 0:
        raise UpstreamError(f"the calibration run of TensorCast's command exited "
                            f"{first.exit_code}")
    found = analytic_check.check(analytic_check.observations(first.summary.models()))
    calibration = {name: c.to_json() for name, c in usable_calibrations(found).items()}
    return replace(request, settings=replace(request.settings, calibration=calibration))
