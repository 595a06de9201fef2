"""TensorCast's throughput search three ways, in one run: upstream's analytic model alone,
upstream's profiling model on the version's CSV directory, and ``profstore tensorcast``.
Reports each search's own "All experiments completed in" time, the ratios, the best
configuration of each, and profstore's lookups (count, time, per lookup, share).

    python -m bench.bench_tensorcast [--root ../shared/perfdb] [--db perf.db] [--rounds 1]
                                     [--model qwen3_dense_32b] [--json FILE]

The searches run one after the other, round by round (``--rounds`` > 1 alternates them
again, each figure then the median), so a machine that gets busier mid-run shows in every
source alike. The default arguments are the issue's reference search (Qwen3-32B, 8
devices, TP 4 and 8, batch 1-64, TPOT <= 50 ms, 2 jobs). Results go to ``--json`` (default
``bench/results/tensorcast-<commit>.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TENSOR_CAST = SHARED / "third_party" / "msmodeling-84fec85"
V18 = "ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5"
SEARCH = ["--device", "ATLAS_800_A3_752T_128G_DIE", "--num-devices", "8", "--input-length",
          "1024", "--output-length", "256", "--tp-sizes", "4", "8", "--tpot-limit", "50",
          "--batch-range", "1", "64", "-j", "2"]
COMPLETED = re.compile(r"All experiments completed in ([0-9.]+) seconds")
TOP = re.compile(r"^\|\s*1\s*\|\s*(?:\x1b\[1m)?([0-9.]+)(?:\x1b\[0m)?\s*\|.*?\|\s*"
                 r"(TP=\d+ \| PP=\d+ \| DP=\d+)\s*\|\s*(\d+)\s*\|", re.M)


@dataclass
class Search:
    """One source's searches: their times, and the best configuration they found."""

    source: str
    seconds: list[float] = field(default_factory=list)
    best: str = ""
    best_throughput: float = 0.0
    batch: int = 0
    lookup_stats: list[dict[str, float]] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)


def _environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TENSORCAST_ROOT": str(TENSOR_CAST),
            "PYTHONPATH": str(TENSOR_CAST)}


def _run(command: list[str], search: Search) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=_environment(),
                          cwd=TENSOR_CAST, timeout=1800)
    found, top = COMPLETED.search(done.stdout), TOP.search(done.stdout)
    if done.returncode != 0 or found is None or top is None:
        raise SystemExit(f"{search.source}: the search failed (exit {done.returncode}): "
                         f"{(done.stderr or done.stdout)[-800:]}")
    search.seconds.append(float(found.group(1)))
    search.best_throughput, search.best, search.batch = (
        float(top.group(1)), top.group(2), int(top.group(3)))


def _profstore(model: Path, db: str, stats: Path, search: Search) -> None:
    _run([sys.executable, "-m", "profstore", "tensorcast", "throughput-optimizer", "--db", db,
          "--version", "v0.18", "--stats-json", str(stats), "--", str(model), *SEARCH], search)
    data = json.loads(stats.read_text(encoding="utf-8"))
    search.lookup_stats.append({
        "lookups": data["lookups"], "lookup_seconds": data["lookup_seconds"],
        "per_lookup_ms": 1000 * data["lookup_seconds"] / max(1, data["lookups"]),
        "share": data["lookup_share"], "setup_seconds": data["setup_seconds"],
        "processes": data["processes_that_looked_up"], "data_sources": data["data_sources"]})


def run(root: Path, db: str | None, model_name: str, rounds: int) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="bench-tensorcast-"))
    try:
        model = work / model_name
        shutil.copytree(TENSOR_CAST / "tests" / "assets" / "model_config" / model_name, model)
        for path in (work, model):
            path.chmod(0o755)
        if db is None:
            db = str(work / "perf.db")
            subprocess.run([sys.executable, "-m", "profstore", "ingest", str(root), "--db", db],
                           check=True, capture_output=True)
        searches = {s: Search(s) for s in ("analytic", "upstream", "profstore")}
        analytic = [sys.executable, "-m", "cli.inference.throughput_optimizer", str(model),
                    *SEARCH]
        for _ in range(rounds):
            _run([*analytic, "--performance-model", "analytic"], searches["analytic"])
            _run([*analytic, "--performance-model", "profiling", "--profiling-database-path",
                  str(root / V18)], searches["upstream"])
            _profstore(model, db, work / "stats.json", searches["profstore"])
        return _report(searches)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _report(searches: dict[str, Search]) -> dict[str, object]:
    ours = searches["profstore"]
    lookups = {key: statistics.median(s[key] for s in ours.lookup_stats)
               for key in ours.lookup_stats[0]}
    return {
        "commit": _commit(), "search": SEARCH,
        "searches": {name: {**asdict(s), "median_s": s.median_s} for name, s in searches.items()},
        "profstore_over_analytic": ours.median_s / searches["analytic"].median_s,
        "profstore_over_upstream": ours.median_s / searches["upstream"].median_s,
        "profstore_lookups": lookups,
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
    parser.add_argument("--model", default="qwen3_dense_32b",
                        help="a model config of TensorCast's tests/assets/model_config")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = run(args.root, args.db, args.model, args.rounds)
    target = args.json or REPO / "bench" / "results" / f"tensorcast-{report['commit']}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name, search in report["searches"].items():  # type: ignore[attr-defined]
        print(f"{name:<10} {search['median_s']:7.2f} s  best {search['best']} batch "
              f"{search['batch']} {search['best_throughput']:.2f} tok/s")
    print(f"profstore / analytic {report['profstore_over_analytic']:.3f}, profstore / upstream "
          f"{report['profstore_over_upstream']:.3f}; lookups {report['profstore_lookups']}")
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
