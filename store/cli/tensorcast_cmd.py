"""``profstore tensorcast``: TensorCast's own commands on profstore (profstore.tensorcast)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profstore.cli.common import CliError, check_database, db_url

if TYPE_CHECKING:
    from profstore.tensorcast.draw_search import DrawRequest


def tensorcast(args: argparse.Namespace) -> int:
    from profstore.tensorcast.commands import CommandRequest, run
    from profstore.tensorcast.settings import Settings
    from profstore.tensorcast.summary import render
    from profstore.tensorcast.upstream import UpstreamError

    draws = _draws(args)
    saved = _saved_calibration(args)
    url = db_url(args)
    check_database(url)
    settings = Settings(url, _version(url, args.version), _json_option(args.context, "--context"),
                        _policy(args.format_policy), compare_dir=_compare_dir(args, url),
                        regime_policy=_regimes(args), calibration=saved)
    request = CommandRequest(args.tensorcast_command, settings, tuple(args.upstream_args),
                             args.tensorcast_root, args.stats_json, args.fallbacks,
                             args.compare_table if args.compare else None)
    try:
        if args.calibrated_fallbacks == "":
            from profstore.tensorcast.commands import calibration_run

            request = calibration_run(request)
            print(f"profstore: calibrated fallbacks for {len(request.settings.calibration or {})}"
                  " op classes, from a first run of the command", file=sys.stderr)
        if draws is None:
            result = run(request)
        else:
            from profstore.tensorcast.draw_search import run_with_draws
            from profstore.tensorcast.draws.report import render as render_draws

            result, drawn = run_with_draws(request, draws)
    except (UpstreamError, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(render(result.summary, result.timing, result.best), file=sys.stderr)
    if draws is not None:
        print(render_draws(drawn), file=sys.stderr)
    if result.compared is not None:
        print(result.compared.line(args.compare_table), file=sys.stderr)
    errors = result.summary.errors()
    if errors:
        raise CliError(f"a TensorCast process could not use profstore: {errors[0]}")
    return result.exit_code


def _saved_calibration(args: argparse.Namespace) -> dict[str, dict[str, float]] | None:
    """``--calibrated-fallbacks FILE``: the usable calibrations of a saved run."""
    if not args.calibrated_fallbacks:
        return None
    from profstore.tensorcast.calibrated import read_saved

    try:
        found = read_saved(args.calibrated_fallbacks)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return {name: c.to_json() for name, c in found.items()}


def analytic_check(args: argparse.Namespace) -> int:
    """``profstore analytic-check STATS_JSON``: a saved run's time by source and check."""
    from profstore.tensorcast.check_report import check_lines, plot
    from profstore.tensorcast.summary import time_lines

    if args.top <= 0:
        raise CliError(f"--top must be a positive number of op classes, got {args.top}")
    try:
        data = json.loads(Path(args.stats).read_text(encoding="utf-8"))
        check = data["analytic_check"]
        data["time_by_source"], check["classes"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CliError(f"{args.stats}: not a profstore tensorcast --stats-json file with an "
                       f"analytic check ({type(exc).__name__}: {exc})") from None
    if args.json:
        keys = ("time_by_source", "best_configuration", "best_time_by_source",
                "upstream_time_by_source", "time_by_class", "analytic_check")
        print(json.dumps({k: data[k] for k in keys if k in data}, indent=2))
    else:
        print("\n".join([*time_lines(data), *check_lines(check, args.top)]))
    if args.plot:
        plot(data, args.plot, args.top)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _draws(args: argparse.Namespace) -> DrawRequest | None:
    """``--draws`` and its options, checked before anything runs (its modules are
    imported only when asked for)."""
    if args.draws is None:
        if args.fallback_error is not None:
            raise CliError("--fallback-error goes with --draws")
        return None
    from profstore.tensorcast.draw_search import DrawRequest, check_request

    draws = DrawRequest(args.draws, args.seed, args.fallback_error)
    try:
        check_request(args.tensorcast_command, tuple(args.upstream_args), draws)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return draws


def _version(url: str, given: str | None) -> str:
    """The version to answer from, asked of the run's own store (opened once in this
    process; the run closes it)."""
    from profstore.tensorcast.stores import shared_store

    store = shared_store(url)
    known = store.versions()
    if given is not None:
        if store.profile(given) is None:
            raise CliError(f"unknown version {given!r} (ingested: {', '.join(known)})")
        return given
    vllm = [v for v in known if not v.startswith("hccl")]
    if len(vllm) != 1:
        raise CliError(f"--version: the database holds {', '.join(known) or 'none'}; name one")
    return vllm[0]


def _json_option(text: str | None, option: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{option}: invalid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CliError(f"{option}: must be a JSON object, got {text!r}")
    return value


def _policy(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    if Path(text).is_file():
        text = Path(text).read_text(encoding="utf-8")
    return _json_option(text, "--format-policy")


def _regimes(args: argparse.Namespace) -> dict[str, Any] | None:
    from profstore.cli.regime_option import load_regime_policy

    policy = load_regime_policy(args)  # checked against the version by the installation
    return None if policy is None else policy.to_json()


def _compare_dir(args: argparse.Namespace, url: str) -> str | None:
    if not args.compare:
        if args.compare_with:
            raise CliError("--compare-with goes with --compare")
        return None
    if args.compare_with:
        directory = Path(args.compare_with)
    else:
        from profstore.cli.common import read_engine, stored_version

        with read_engine(args) as engine, engine.connect() as conn:
            directory = Path(stored_version(conn, args.version or _version(url, None)).source_path)
    if not directory.is_dir():
        raise CliError(f"--compare: no version directory at {directory} (--compare-with DIR)")
    return str(directory)
