"""Every verb's name, help and options, and the function that runs it.

``profstore --help`` and ``profstore VERB --help`` are answered from these parsers alone:
the module that implements a verb (and SQLAlchemy, numpy, the evaluation code behind it)
is imported only when the verb runs, by ``Run``. A verb is registered here and
implemented in its module; its example is in store/cli/reference.py.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from importlib import import_module

from profstore.cli.common import add_version_option, db_options, json_options
from profstore.storage.sql_door import DEFAULT_SECONDS

INGEST = "profstore.cli.ingest_cmd"
INSPECT = "profstore.cli.inspect"
LOOKUP = "profstore.cli.lookup_cmd"
EVALUATE = "profstore.cli.evaluate"
INSIGHT = "profstore.cli.insight"
DEMO = "profstore.cli.demo_cmd"
SERVE = "profstore.cli.serve_cmd"

DEFAULT_MAX_ROWS = 10_000
INTERPOLATION_HELP = "exact measurements only (base exact and exact coordinates)"
SERVE_DESCRIPTION = """\
Serve a SQLite store read-only with Datasette on this machine (127.0.0.1 unless --host
says otherwise). Needs the extra: pip install 'profstore[web]'. The pages:

  /                       the tables and views, each described; the canned queries
  /DB/regimes             every regime with point counts and axis ranges (facets: version,
                          path, kernel); a regime_key opens the regime's page
  /-/profstore/regime     one regime: its curve or triangulation with hold-out errors
  /-/profstore/overview   one version as small multiples: kernels per path, refusals,
                          duplicates, rejected rows
  /-/profstore/explain    paste a leaf descriptor: the explain output, rows used linked
"""


@dataclass(frozen=True)
class Run:
    """A verb's handler (``args -> exit code``): ``function`` of ``module``, looked up when
    the verb runs (so a test's monkeypatch of the module attribute is what runs)."""

    module: str
    function: str

    def __call__(self, args: argparse.Namespace) -> int:
        handler = getattr(import_module(self.module), self.function)
        return handler(args)


def register_ingest(subparsers: argparse._SubParsersAction) -> None:
    db = subparsers.add_parser("db", help="database administration")
    db_verbs = db.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    up = db_verbs.add_parser("upgrade", parents=[db_options()],
                             help="create the schema or bring it to the latest revision")
    up.set_defaults(handler=Run(INGEST, "db_upgrade"))
    cp = db_verbs.add_parser(
        "checkpoint", parents=[db_options()],
        help="fold the write-ahead log into the SQLite file (ready for read-only storage)",
        description="Fold the -wal file into the database and leave WAL mode, so the file "
                    "alone is the database: copy it to read-only storage, where readers "
                    "open it with immutable=1.")
    cp.set_defaults(handler=Run(INGEST, "db_checkpoint"))
    p = subparsers.add_parser("ingest", parents=[db_options(), json_options()],
                              help="load profiling version directories (idempotent)")
    p.add_argument("path", metavar="PATH",
                   help="a data root (<DEVICE>/vllm_ascend/<version>/…) or one version directory")
    p.add_argument("--allow-missing-mapping", action="store_true",
                   help="ingest a version whose op_mapping.yaml is unusable (a Git LFS "
                        "pointer, broken YAML) under the default policy, instead of failing it")
    p.add_argument("--no-wait", action="store_true",
                   help="fail at once when another ingest holds the database (default: wait)")
    p.set_defaults(handler=Run(INGEST, "ingest"))


def register_inspect(subparsers: argparse._SubParsersAction) -> None:
    common = [db_options(), json_options()]
    p = subparsers.add_parser("versions", parents=common, help="ingested versions")
    p.set_defaults(handler=Run(INSPECT, "versions"))
    p = subparsers.add_parser("kernels", parents=common, help="kernel files of a version")
    add_version_option(p)
    p.set_defaults(handler=Run(INSPECT, "kernels"))
    p = subparsers.add_parser("regimes", parents=common,
                              help="regimes of a version: points and axis ranges")
    add_version_option(p)
    p.add_argument("--kernel", metavar="K", help="only this kernel type")
    p.add_argument("--path", metavar="P", help="only this path (e.g. generic)")
    p.set_defaults(handler=Run(INSPECT, "regimes"))
    p = subparsers.add_parser("duplicates", parents=common,
                              help="coordinates measured more than once, with their spread")
    add_version_option(p)
    p.add_argument("--kernel", metavar="K", help="only this kernel type")
    p.set_defaults(handler=Run(INSPECT, "duplicates"))
    p = subparsers.add_parser("rejected", parents=common,
                              help="rows ingest refused, and rows a path refused")
    add_version_option(p)
    p.add_argument("--limit", type=_non_negative, default=20, metavar="N",
                   help="sample rows to show (default 20)")
    p.set_defaults(handler=Run(INSPECT, "rejected"))
    p = subparsers.add_parser("sql", parents=common, help="run one read-only SQL query")
    p.add_argument("query", metavar="SQL", help="a single SELECT / WITH / EXPLAIN / PRAGMA")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="bind :NAME to VALUE (as text); repeatable")
    p.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_SECONDS,
                   metavar="SECONDS",
                   help=f"stop the statement after SECONDS (default {DEFAULT_SECONDS:g})")
    p.add_argument("--max-rows", type=_non_negative, default=DEFAULT_MAX_ROWS, metavar="N",
                   help=f"print at most N rows (default {DEFAULT_MAX_ROWS}); says so on "
                        "stderr when it cuts")
    p.set_defaults(handler=Run(INSPECT, "sql"))


def register_lookup(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("lookup", parents=[db_options()],
                              help="look up JSON-lines descriptors, one JSON line out per query")
    _lookup_options(p)
    p.add_argument("input", nargs="?", default="-", metavar="FILE|-",
                   help="JSON lines, one descriptor each, optionally with an \"id\" "
                        "(default: stdin)")
    p.set_defaults(handler=Run(LOOKUP, "lookup"))
    p = subparsers.add_parser("explain", parents=[db_options()],
                              help="the decision path of one descriptor, for a person")
    _lookup_options(p)
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("descriptor", metavar="DESCRIPTOR_JSON|-",
                   help="a leaf descriptor as JSON, or - to read it from stdin")
    p.set_defaults(handler=Run(LOOKUP, "explain"))


REGIME_POLICY_HELP = (
    "a JSON or YAML file of stated regime equivalences, per op or kernel and regime field, "
    "e.g. '{\"ops\": {\"tensor_cast.dynamic_quantize_symmetric.default\": {\"scale_mode\": "
    "{\"per_tensor\": \"per_token\"}}}}': a target whose own regime has no row reads the "
    "stated one, and its answer says so (regime_equivalences); profstore never assumes one")


def add_regime_policy_option(parser: argparse.ArgumentParser) -> None:
    """``--regime-policy FILE`` (profstore.cli.regime_option reads it)."""
    parser.add_argument("--regime-policy", metavar="FILE", help=REGIME_POLICY_HELP)


def _lookup_options(parser: argparse.ArgumentParser) -> None:
    add_version_option(parser)
    parser.add_argument("--disable-profiling-interpolation", action="store_true",
                        help=INTERPOLATION_HELP)
    parser.add_argument("--mapping-overlay", metavar="FILE",
                        help="an op_mapping YAML whose entries and policies override the "
                             "version's")
    parser.add_argument("--format-policy", metavar="JSON|FILE",
                        help="formats for tensors a descriptor leaves unstated (\"format\": "
                             "null) or omits (ND by default), e.g. "
                             "'{\"ops\": {\"aten.mm.default\": {\"1\": \"FRACTAL_NZ\"}}}'; "
                             "'{\"default\": \"infer\"}' resolves every format not stated "
                             "from the mapping and the measured rows (a JSON text or file)")
    add_regime_policy_option(parser)


def register_evaluation(subparsers: argparse._SubParsersAction) -> None:
    common = [db_options(), json_options()]
    p = subparsers.add_parser("replay", parents=common,
                              help="replay a TensorCast trace: modelled latency and sources")
    p.add_argument("workload", metavar="WORKLOAD", help="a TensorCast trace JSON file")
    _store_options(p)
    _replay_options(p)
    p.add_argument("--variants", action="store_true", help="also list every shape variant")
    add_regime_policy_option(p)
    p.add_argument("--interval", action="store_true",
                   help="the total's p10-p90 interval from hold-out errors (profstore.cli.insight)")
    p.add_argument("--draws", type=_positive, default=4000, metavar="N",
                   help="Monte Carlo draws of --interval")
    p.add_argument("--no-error-cache", action="store_true",
                   help="recompute the hold-out errors of --interval instead of caching them")
    p.set_defaults(handler=Run(EVALUATE, "replay"))
    p = subparsers.add_parser("holdout", parents=common,
                              help="leave-one-out error of the interpolating paths and of "
                                   "the communication rule (--path communication: only it)")
    _store_options(p)
    p.add_argument("--kernel", metavar="K", help="only this kernel type")
    p.add_argument("--path", metavar="P", help="only this path")
    p.add_argument("--plot", metavar="FILE", help="write the error distribution as PNG")
    p.add_argument("--points", action="store_true", help="include every point in --json")
    p.set_defaults(handler=Run(EVALUATE, "holdout"))
    p = subparsers.add_parser("report", parents=[db_options()],
                              help="the minimal evaluation report (Markdown or HTML)")
    _store_options(p)
    _replay_options(p)
    p.add_argument("--workload", nargs="+", default=[], metavar="W", help="traces to replay")
    p.add_argument("--format", choices=("md", "html"), default="md")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--kernel", metavar="K", help="hold out only this kernel")
    p.add_argument("--path", metavar="P", help="hold out only this path")
    p.add_argument("--no-holdout", action="store_true", help="skip the hold-out evaluation")
    p.set_defaults(handler=Run(EVALUATE, "report"))
    p = subparsers.add_parser("plot", parents=[db_options()],
                              help="one regime: measured points, interpolant, hold-out errors")
    _store_options(p)
    p.add_argument("--kernel", required=True, metavar="K")
    p.add_argument("--path", metavar="P")
    p.add_argument("--regime", metavar="ID",
                   help="rank in `profstore regimes --kernel K [--path P]` or a regime_key "
                        "(default: the regime with the most points)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.png")
    p.set_defaults(handler=Run(EVALUATE, "plot"))


def register_insight(subparsers: argparse._SubParsersAction) -> None:
    common = [db_options(), json_options()]
    p = subparsers.add_parser(
        "gaps", parents=common,
        help="what to profile next: a workload's gaps and a bracketing profiling plan",
        description="Replay WORKLOAD, rank every missed or interpolated leaf by simulated "
                    "time (per kernel and regime), propose grid points that bracket them, "
                    "and measure the coverage the plan would give on a temporary copy.")
    p.add_argument("workload", metavar="WORKLOAD",
                   help="a TensorCast trace JSON or a JSON-lines file of leaves")
    _store_options(p)
    _workload_options(p)
    p.add_argument("--budget", type=int, metavar="N", help="at most N shapes (greedy by time)")
    p.add_argument("-o", "--output", metavar="PLAN.csv", help="write the plan as profiler CSV")
    p.set_defaults(handler=Run(INSIGHT, "gaps"))
    p = subparsers.add_parser(
        "diff", parents=common,
        help="what changed between two versions (latencies, regimes, mapping, totals)",
        description="Compare version V1 (in --db) with V2 (in --db-b, default the same "
                    "database): latency ratios at shared coordinates per kernel and regime, "
                    "kernels and regimes in one only, changed mapping entries, and the "
                    "simulated total of each --workload in both.")
    p.add_argument("--db-b", metavar="URL_OR_PATH", help="the database of --to (default --db)")
    p.add_argument("--from", dest="from_version", required=True, metavar="V1")
    p.add_argument("--to", dest="to_version", required=True, metavar="V2")
    p.add_argument("--workload", nargs="+", default=[], metavar="W", help="traces to replay")
    p.add_argument("--regimes", action="store_true", help="also list every regime")
    p.add_argument("--plot", metavar="FILE.png", help="ratio distribution per kernel")
    p.add_argument("--mapping-overlay", metavar="FILE",
                   help="an op_mapping YAML merged over the version's")
    _workload_options(p)
    p.set_defaults(handler=Run(INSIGHT, "diff"))
    p = subparsers.add_parser(
        "calibrate", parents=common,
        help="hide rows, replay, and count how often the truth falls in the interval",
        description="Each trial hides --share of the version's rows, replays WORKLOAD "
                    "with the p10-p90 interval, and checks the full-data total against it.")
    p.add_argument("workload", metavar="WORKLOAD")
    _store_options(p)
    _workload_options(p)
    p.add_argument("--share", type=float, default=0.2, help="share of rows hidden per trial")
    p.add_argument("--trials", type=_positive, default=20, metavar="N")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(handler=Run(INSIGHT, "calibrate"))


def register_demo(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="generate a small demo database, ingest, inspect and look up",
        description="Write demo profiling data (roofline-formula latencies, not measurements) "
                    "to DIR/data, ingest it into DIR/demo.db, print the inspection summary "
                    "and answer a few lookups.")
    parser.add_argument("--dir", default="demo", help="output folder (default: ./demo)")
    parser.set_defaults(handler=Run(DEMO, "run"))


def register_serve(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve", parents=[db_options()], help="browse the store in a web browser (Datasette)",
        description=SERVE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=_port, default=8001,
                   help="port (default: 8001; 0 picks a free one, printed on start)")
    p.add_argument("--open", action="store_true", help="open the index in a web browser")
    p.add_argument("--live", action="store_true",
                   help="follow a concurrent ingest (opens mode=ro instead of immutable; "
                        "chosen by itself when the file has a write-ahead log in use)")
    p.set_defaults(handler=Run(SERVE, "serve"))


def _positive(value: str) -> int:
    number = int(value)
    if number <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return number


def _store_options(parser: argparse.ArgumentParser) -> None:
    add_version_option(parser)
    parser.add_argument("--mapping-overlay", metavar="FILE",
                        help="an op_mapping YAML merged over the version's")


def _replay_options(parser: argparse.ArgumentParser) -> None:
    _workload_options(parser)
    parser.add_argument("--disable-profiling-interpolation", action="store_true",
                        help="exact measurements only")


def _workload_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num-devices", type=_positive, metavar="N",
                        help="context.num_devices of every leaf (communication ops)")
    parser.add_argument("--ep-size", type=_positive, metavar="N",
                        help="context.ep_size of every leaf (MoE ops)")


def _positive_seconds(value: str) -> float:
    number = float(value)
    if not 0 < number < 1e6:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return number


def _non_negative(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return number


def _port(value: str) -> int:
    number = int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError("must be 0..65535")
    return number
