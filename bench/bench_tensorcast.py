"""What a user of TensorCast waits for, three ways: upstream's analytic model alone,
upstream's profiling model on the version's CSV directory, and ``profstore tensorcast``;
and a fourth for reference: the analytic command with the collector freezes profstore's
command makes (``analytic-frozen``, ``bench.frozen_upstream``), so that profstore against
it shows the lookups' cost apart from what the freezes save.

For each command: its wall clock (the command's start to its exit, as the user waits) beside
upstream's own "All experiments completed in" (the search alone), the time outside the
search (wall − completed in), the best configuration, and profstore's lookups (count, time,
per lookup, share of the processes' time). Scenarios (``SCENARIOS``): the issue's dense
reference search (Qwen3-32B, 8 devices, TP 4 and 8, batch 1-64, TPOT <= 50 ms, 2 jobs),
its MoE search (Qwen3-30B-A3B, input 2048, output 512, TP 2/4, EP 2/8, batch 8-48,
TPOT <= 40 ms) and text-generate's Qwen3-32B decode step (profstore against the two
analytic commands).

    python -m bench.bench_tensorcast [--root ../shared/perfdb] [--db perf.db] [--rounds 2]
                                     [--scenarios dense moe decode-step] [--out FILE_STEM]
                                     [--baseline-python ../main/.venv/bin/python]
                                     [--baseline-db ../main/perf.db]

Each round runs every scenario's commands one after the other (analytic, analytic-frozen,
upstream, profstore), so a machine that gets busier mid-run shows in every source alike;
the decode step, a command of seconds, runs its sources three times a round
(``Scenario.repeats``). A figure is the median over every run of a source, every run is
kept. The load average before each command is recorded. Results:
``bench/results/tensorcast-<commit>.json`` and ``.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.tensorcast_report import Run, markdown, summary

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TENSOR_CAST = SHARED / "third_party" / "msmodeling-84fec85"
V18 = "ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
DEVICE = ["--device", "ATLAS_800_A3_752T_128G_DIE"]
COMPLETED = re.compile(r"All experiments completed in ([0-9.]+) seconds")
TOP = re.compile(r"^\|\s*1\s*\|\s*(?:\x1b\[1m)?([0-9.]+)(?:\x1b\[0m)?\s*\|.*?\|\s*"
                 r"(TP=\d+ \| PP=\d+ \| DP=\d+)\s*\|\s*(\d+)\s*\|", re.M)
STEP = re.compile(r"\[(?:analytic|empirical)\] Execution time: ([0-9.]+) s")
FROZEN = "analytic-frozen"
"""Upstream's analytic command with the freezes ``profstore tensorcast`` makes and nothing
else (``bench.frozen_upstream``): profstore against it is the lookups' cost alone."""
BASELINE = "profstore-baseline"
"""``profstore tensorcast`` run by ``--baseline-python`` (another checkout's interpreter)."""


@dataclass(frozen=True)
class Baseline:
    """Another checkout's interpreter, and the database it reads (None: ``--db``): a
    checkout at another schema revision refuses this one's database."""

    python: str
    db: str | None = None
UPSTREAM = {"throughput-optimizer": "cli.inference.throughput_optimizer",
            "text-generate": "cli.inference.text_generate"}


@dataclass(frozen=True)
class Scenario:
    name: str
    model: str
    command: str
    args: tuple[str, ...]
    sources: tuple[str, ...] = ("analytic", FROZEN, "upstream", "profstore")
    repeats: int = 1
    """Times a round runs the scenario's sources, alternating: a command of a few seconds
    spreads by ±5 % run to run, as much as the ratio its target allows."""


SCENARIOS = (
    Scenario("dense", "qwen3_dense_32b", "throughput-optimizer", (
        *DEVICE, "--num-devices", "8", "--input-length", "1024", "--output-length", "256",
        "--tp-sizes", "4", "8", "--tpot-limit", "50", "--batch-range", "1", "64", "-j", "2")),
    Scenario("moe", "qwen3_moe_30b_a3b", "throughput-optimizer", (
        *DEVICE, "--num-devices", "8", "--input-length", "2048", "--output-length", "512",
        "--tp-sizes", "2", "4", "--ep-sizes", "2", "8", "--tpot-limit", "40", "--batch-range",
        "8", "48", "-j", "2")),
    Scenario("decode-step", "qwen3_dense_32b", "text-generate", (
        "--num-queries", "16", "--query-length", "1", "--context-length", "4096", "--decode",
        *DEVICE, "--tp-size", "8", "--num-devices", "8"), ("analytic", FROZEN, "profstore"),
        repeats=3),
)


def _environment() -> dict[str, str]:
    """Upstream's packages first on the path; this checkout after them, for
    ``bench.frozen_upstream`` (upstream's own top-level names win)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TENSORCAST_ROOT": str(TENSOR_CAST),
            "PYTHONPATH": os.pathsep.join((str(TENSOR_CAST), str(REPO)))}


def _command(scenario: Scenario, source: str, model: Path, db: str, root: Path,
             stats: Path, baseline: Baseline | None) -> list[str]:
    args = [str(model), *scenario.args]
    if source.startswith("profstore"):
        python = sys.executable
        if source == BASELINE and baseline is not None:
            python, db = baseline.python, baseline.db or db
        return [python, "-m", "profstore", "tensorcast", scenario.command, "--db", db,
                "--version", "v0.18", "--stats-json", str(stats), "--", *args]
    upstream = [sys.executable, "-m", UPSTREAM[scenario.command], *args,
                "--performance-model"]
    if source == "analytic":
        return [*upstream, "analytic"]
    if source == FROZEN:
        return [sys.executable, "-m", "bench.frozen_upstream", *upstream[2:], "analytic"]
    return [*upstream, "profiling", "--profiling-database-path", str(root / V18)]


def _run(scenario: Scenario, source: str, command: list[str], stats: Path) -> Run:
    stats.unlink(missing_ok=True)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=_environment(),
                          cwd=TENSOR_CAST, timeout=1800)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{scenario.name} {source}: exit {done.returncode}: "
                         f"{(done.stderr or done.stdout)[-800:]}")
    found, top, step = (COMPLETED.search(done.stdout), TOP.search(done.stdout),
                        STEP.search(done.stdout))
    if scenario.command == "throughput-optimizer" and found is None:
        raise SystemExit(f"{scenario.name} {source}: no 'completed in' line: "
                         f"{done.stdout[-800:]}")
    run = Run(wall, float(found.group(1)) if found else None, load,
              step_s=float(step.group(1)) if step else None)
    if top is not None:  # a search where no configuration meets the limits has no table
        run.best, run.best_throughput, run.batch = (
            top.group(2), float(top.group(1)), int(top.group(3)))
    if source.startswith("profstore"):
        run.lookups = _lookups(json.loads(stats.read_text(encoding="utf-8")))
    return run


def _lookups(data: dict[str, object]) -> dict[str, float]:
    count, seconds = float(data["lookups"]), float(data["lookup_seconds"])  # type: ignore[arg-type]
    return {"lookups": count, "lookup_seconds": seconds,
            "per_lookup_ms": 1000 * seconds / max(1.0, count),
            "share": float(data["lookup_share"]),  # type: ignore[arg-type]
            # a baseline from before the collections were counted apart: 0 and the share
            "collection_seconds": float(data.get("lookup_collection_seconds", 0.0)),  # type: ignore[arg-type]
            "share_without_collections": float(data.get(  # type: ignore[arg-type]
                "lookup_share_without_collections", data["lookup_share"])),
            "setup_seconds": float(data["setup_seconds"]),  # type: ignore[arg-type]
            "processes": float(data["processes_that_looked_up"])}  # type: ignore[arg-type]


def run(root: Path, db: str | None, scenarios: list[Scenario], rounds: int,
        baseline: Baseline | None = None) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="bench-tensorcast-"))
    try:
        models = {name: _model_dir(name, work) for name in {s.model for s in scenarios}}
        db = db or _ingest(work, root)
        extra = (BASELINE,) if baseline else ()
        runs: dict[str, dict[str, list[Run]]] = {
            s.name: {source: [] for source in (*s.sources, *extra)} for s in scenarios}
        for _ in range(rounds):
            for scenario in scenarios:
                for _ in range(scenario.repeats):
                    for source in runs[scenario.name]:
                        stats = work / "stats.json"
                        command = _command(scenario, source, models[scenario.model], db,
                                           root, stats, baseline)
                        runs[scenario.name][source].append(
                            _run(scenario, source, command, stats))
        return _report(scenarios, runs, baseline)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _model_dir(name: str, parent: Path) -> Path:
    """A config of TensorCast's tests/assets/model_config copied under ``parent``, both
    0755 (TensorCast refuses a group- or world-writable model folder)."""
    target = parent / name
    shutil.copytree(TENSOR_CAST / "tests" / "assets" / "model_config" / name, target)
    for path in (parent, target):
        path.chmod(0o755)
    return target


def _ingest(folder: Path, root: Path = SHARED / "perfdb") -> str:
    """The corpus under ``root`` ingested into ``folder/perf.db``; its path."""
    db = str(folder / "perf.db")
    subprocess.run([sys.executable, "-m", "profstore", "ingest", str(root), "--db", db],
                   check=True, capture_output=True)
    return db


def _report(scenarios: list[Scenario], runs: dict[str, dict[str, list[Run]]],
            baseline: Baseline | None) -> dict[str, object]:
    return {
        "commit": _commit(), "cpus": os.cpu_count(),
        "baseline_python": baseline.python if baseline else None,
        "baseline_db": baseline.db if baseline else None,
        "scenarios": {s.name: {
            "model": s.model, "command": s.command, "args": list(s.args),
            "repeats": s.repeats,
            "runs": {source: [{**asdict(r), "outside_s": r.outside_s} for r in found]
                     for source, found in runs[s.name].items()},
            "summary": summary(runs[s.name])} for s in scenarios},
    }


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=REPO)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_tensorcast",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=SHARED / "perfdb")
    parser.add_argument("--db", help="an ingested database (default: ingest --root afresh)")
    parser.add_argument("--scenarios", nargs="+", choices=[s.name for s in SCENARIOS],
                        default=[s.name for s in SCENARIOS])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline-python", metavar="PY",
                        help="also run profstore tensorcast with this interpreter (another "
                             "checkout's venv) as the source profstore-baseline, in each round")
    parser.add_argument("--baseline-db", metavar="DB",
                        help="the database the baseline reads (default: --db; a checkout at "
                             "an older schema revision needs its own)")
    parser.add_argument("--out", type=Path,
                        help="the result files' path without suffix (default: "
                             "bench/results/tensorcast-<commit>)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds: at least 1")
    chosen = [s for s in SCENARIOS if s.name in args.scenarios]
    if args.baseline_db and not args.baseline_python:
        parser.error("--baseline-db: only with --baseline-python")
    baseline = Baseline(args.baseline_python, args.baseline_db) if args.baseline_python else None
    report = run(args.root, args.db, chosen, args.rounds, baseline)
    stem = args.out or REPO / "bench" / "results" / f"tensorcast-{report['commit']}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    text = markdown(report)
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    Path(f"{stem}.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"written to {stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
