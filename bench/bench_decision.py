"""``--draws`` calibrated at decision level: hide a share of the rows, run the search with
draws, and count how often the full-data best configuration is among those the
hidden-data run calls plausible (won at least one draw).

    python -m bench.bench_decision [--root ../shared/perfdb] [--draws 5] [--trials 3]
                                   [--moe-trials N] [--share 0.2] [--search dense|moe ...]
                                   [--json FILE]

Rows are hidden by leaving them out of a copy of the version's CSV directory (each data
row independently with probability ``--share``, seeded per trial) that is then ingested
into its own database: the lookups see exactly the rows that remain, as with
``exclude_samples``, and the error pools of the draws come from the reduced data too (what
a user with less data would have). The searches run as users run them (the ``profstore``
CLI in a subprocess); each trial is one nominal search plus K draws, so its time is about
(K + 1) searches, plus the reduced database's hold-out errors on first use. Results go to
``--json`` (default ``bench/results/decision-<commit>.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TENSOR_CAST = SHARED / "third_party" / "msmodeling-84fec85"
DEVICE = "ATLAS_800_A3_752T_128G_DIE"
VERSION_DIR = "vllm0.18.0_torch2.9.0_cann8.5"
COMMON = ["--device", DEVICE, "--num-devices", "8", "--input-length", "1024",
          "--output-length", "256", "--tpot-limit", "50", "-j", "2"]
SEARCHES = {
    "dense": ("qwen3_dense_32b", [*COMMON, "--tp-sizes", "4", "8", "--batch-range", "32", "64"]),
    "moe": ("qwen3_moe_30b_a3b", [*COMMON, "--tp-sizes", "1", "2", "--ep-sizes", "4", "8",
                                  "--batch-range", "1", "32"]),
}


@dataclass
class Run:
    """One search with draws: its ``"draws"`` object and its wall time."""

    hidden_rows: int
    seconds: float
    draws: dict


@dataclass
class SearchResult:
    name: str
    model: str
    full: Run
    trials: list[Run] = field(default_factory=list)

    @property
    def full_best(self) -> str:
        return str(self.full.draws["nominal_best"])

    def counts(self) -> dict[str, int]:
        plausible = sum(self.full_best in t.draws["winners"] for t in self.trials)
        same = sum(t.draws["nominal_best"] == self.full_best for t in self.trials)
        return {"trials": len(self.trials), "full_best_plausible": plausible,
                "hidden_nominal_is_full_best": same}


def reduced_corpus(root: Path, target: Path, share: float, seed: int) -> int:
    """The device's version directory with each data row left out with probability
    ``share`` (headers and non-CSV files kept), and its hccl folder; the rows left out."""
    rng = np.random.default_rng(seed)
    device = root / DEVICE
    shutil.copytree(device / "hccl", target / DEVICE / "hccl")
    source = device / "vllm_ascend" / VERSION_DIR
    out = target / DEVICE / "vllm_ascend" / VERSION_DIR
    out.mkdir(parents=True)
    hidden = 0
    for path in sorted(source.iterdir()):
        if path.suffix != ".csv":
            shutil.copy2(path, out / path.name)
            continue
        header, *rows = path.read_text(encoding="utf-8").splitlines(keepends=True)
        keep = rng.random(len(rows)) >= share
        hidden += int((~keep).sum())
        (out / path.name).write_text(header + "".join(r for r, k in zip(rows, keep) if k),
                                     encoding="utf-8")
    return hidden


def profstore(*words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TENSORCAST_ROOT": str(TENSOR_CAST)}
    return subprocess.run([sys.executable, "-m", "profstore", *words], capture_output=True,
                          text=True, env=env, timeout=7200)


def search(db: Path, model_dir: Path, args: list[str], draws: int, seed: int,
           hidden: int, work: Path) -> Run:
    stats = work / "stats.json"
    start = perf_counter()
    done = profstore("tensorcast", "throughput-optimizer", "--db", str(db), "--version",
                     "v0.18", "--draws", str(draws), "--seed", str(seed), "--stats-json",
                     str(stats), "--", str(model_dir), *args)
    seconds = perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"search failed: {done.stderr[-2000:]}")
    print(done.stderr.split("draws:", 1)[-1][:1500], file=sys.stderr)
    return Run(hidden, seconds, json.loads(stats.read_text())["draws"])


def model_copy(name: str, work: Path) -> Path:
    target = work / "models" / name
    shutil.copytree(TENSOR_CAST / "tests" / "assets" / "model_config" / name, target)
    for path in (target.parent, target):
        path.chmod(0o755)  # TensorCast refuses group- or world-writable config folders
    return target


def ingest(root: Path, db: Path) -> None:
    done = profstore("ingest", str(root), "--db", str(db))
    if done.returncode != 0:
        raise SystemExit(f"ingest failed: {done.stderr[-2000:]}")


def run_search(name: str, options: argparse.Namespace, work: Path) -> SearchResult:
    model, args = SEARCHES[name]
    model_dir = model_copy(model, work / name)
    full_db = work / "full.db"
    if not full_db.exists():
        ingest(options.root, full_db)
    print(f"== {name}: full data", file=sys.stderr)
    result = SearchResult(name, model, search(full_db, model_dir, args, options.draws,
                                              options.seed, 0, work))
    trials = options.moe_trials if name == "moe" and options.moe_trials is not None else (
        options.trials)
    for trial in range(trials):
        trial_dir = work / name / f"trial-{trial}"
        hidden = reduced_corpus(options.root, trial_dir / "perfdb", options.share,
                                options.seed + trial)
        ingest(trial_dir / "perfdb", trial_dir / "reduced.db")
        print(f"== {name}: trial {trial}, {hidden} rows hidden", file=sys.stderr)
        result.trials.append(search(trial_dir / "reduced.db", model_dir, args, options.draws,
                                    options.seed, hidden, work))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=SHARED / "perfdb")
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--moe-trials", type=int, help="trials of the MoE search (default: "
                        "--trials)")
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--search", nargs="+", choices=sorted(SEARCHES),
                        default=["dense", "moe"])
    parser.add_argument("--json", type=Path)
    options = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-decision-") as tmp:
        os.environ.setdefault("XDG_CACHE_HOME", str(Path(tmp) / "cache"))
        for name in options.search:
            found = run_search(name, options, Path(tmp))
            results.append(found)
            print(f"{name}: full-data best {found.full_best}; {found.counts()}",
                  file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=REPO).stdout.strip() or "unknown"
    out = options.json or REPO / "bench" / "results" / f"decision-{commit}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    body = {"commit": commit, "draws": options.draws, "share": options.share,
            "seed": options.seed, "searches": [
                {**asdict(r), "counts": r.counts()} for r in results]}
    out.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
