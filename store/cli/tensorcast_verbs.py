"""The ``tensorcast`` verb's parser: TensorCast's own commands run on profstore."""

from __future__ import annotations

import argparse

from profstore.cli.common import db_options

TENSORCAST = "profstore.cli.tensorcast_cmd"
COMMANDS = ("text-generate", "throughput-optimizer")
MISSING_SEPARATOR = ("tensorcast: put TensorCast's own arguments after --, e.g. profstore "
                     "tensorcast text-generate --db perf.db -- MODEL_DIR ...")
DESCRIPTION = """\
Run TensorCast's own command, unchanged, with profstore as its profiling data source in the
parent and in every worker it starts. Everything after -- goes to upstream's own parser
(--performance-model profiling and its database are set here: name the database with --db).
TensorCast is imported from --tensorcast-root, else $TENSORCAST_ROOT, else the Python path.
At the end a summary (stderr): lookups in all processes, time in lookups and in setup,
answers by source, misses by reason, and the ops that fell back to TensorCast's analytic
model with the most simulated time.
"""


CHECK_DESCRIPTION = """\
Read a saved `profstore tensorcast ... --stats-json FILE` run: the simulated time by source
(measured, interpolated, zero-cost, calibrated, analytic fallback by miss reason) for the run
and its best configuration, and per op class (kernel, or op where none is mapped) the ratio
measured / analytic over the ops profstore answered, with the leave-one-out error of
TensorCast's raw analytic answer and of the class's calibration. A class is usable (its
calibration may price fallbacks: --calibrated-fallbacks) with at least 5 ops and a calibrated
error below the raw one.
"""


def register_tensorcast(subparsers: argparse._SubParsersAction) -> None:
    from profstore.cli.verbs import Run, add_regime_policy_option

    p = subparsers.add_parser(
        "tensorcast", parents=[db_options()], description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run TensorCast's text-generate or throughput-optimizer on profstore")
    p.add_argument("tensorcast_command", choices=COMMANDS, metavar="COMMAND",
                   help=f"upstream's command: {', '.join(COMMANDS)}")
    p.add_argument("--version", metavar="V",
                   help="version alias or directory (default: the database's only version)")
    p.add_argument("--tensorcast-root", metavar="DIR",
                   help="the folder holding TensorCast's tensor_cast/ and cli/")
    p.add_argument("--stats-json", metavar="FILE", help="write the run summary as JSON")
    p.add_argument("--fallbacks", metavar="FILE",
                   help="write the ops that fell back to the analytic model as a workload "
                        "(JSON lines with calls) for `profstore gaps`")
    p.add_argument("--context", metavar="JSON",
                   help="LeafContext fields for every leaf, e.g. '{\"phase\": \"decode\"}'")
    p.add_argument("--format-policy", metavar="JSON|FILE",
                   help="formats for the tensors TensorCast leaves unstated (see `lookup`)")
    add_regime_policy_option(p)
    p.add_argument("--compare", action="store_true",
                   help="also ask upstream's own data source on the version's CSV directory "
                        "for every op (the simulation uses profstore's answer) and write "
                        "the per-op table")
    p.add_argument("--compare-with", metavar="DIR",
                   help="the version directory upstream reads (default: the ingested one)")
    p.add_argument("--compare-table", metavar="FILE", default="tensorcast-compare.csv",
                   help="where --compare writes its per-op table (default: %(default)s)")
    p.add_argument("--draws", metavar="K", type=int,
                   help="throughput-optimizer: after the search, K more in which every "
                        "profstore answer is multiplied by an error from its own error "
                        "distribution (as replay --interval); report which configurations "
                        "win and whether the nominal best is robust")
    p.add_argument("--seed", metavar="S", type=int, default=0,
                   help="the seed of --draws (default: %(default)s)")
    p.add_argument("--fallback-error", metavar="F", type=float,
                   help="with --draws: a relative error F for answers TensorCast's analytic "
                        "model gave, drawn as (1+F)**z, z standard normal; 0: none (default: "
                        "each op class's error from the run's analytic check)")
    p.add_argument("--calibrated-fallbacks", metavar="STATS_JSON", nargs="?", const="",
                   help="price a miss of an op class whose calibration is usable as "
                        "TensorCast's analytic answer times that calibration (source "
                        "CALIBRATED); the calibration from a saved --stats-json file, else "
                        "from a first run of the same command (default: off)")
    p.set_defaults(handler=Run(TENSORCAST, "tensorcast"), upstream_args=[])
    register_analytic_check(subparsers)


def register_analytic_check(subparsers: argparse._SubParsersAction) -> None:
    from profstore.cli.common import json_options
    from profstore.cli.verbs import Run

    p = subparsers.add_parser(
        "analytic-check", parents=[json_options()], description=CHECK_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="a saved `profstore tensorcast` run: time by source, and TensorCast's analytic "
             "model checked against the data per op class")
    p.add_argument("stats", metavar="STATS_JSON",
                   help="the run's --stats-json file")
    p.add_argument("--plot", metavar="FILE.png",
                   help="time by source per op class, and measured against analytic per class")
    p.add_argument("--top", metavar="N", type=int, default=20,
                   help="op classes in the tables and the plot (default: %(default)s)")
    p.set_defaults(handler=Run(TENSORCAST, "analytic_check"))
