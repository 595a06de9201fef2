"""Ingest benchmark: time, CPU time and peak RSS to load a profiling corpus into a fresh
SQLite file, per version, and the size of the resulting database.

    python -m bench.bench_ingest [--root ../shared/perfdb] [--json FILE] [--profile FILE]

Wall time is what the target (the whole corpus in under 10 s on a 2-core machine) is
about; CPU time is printed beside it because wall time on a shared machine also counts
the time other processes held the cores.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import resource
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from profstore.ingest.discover import discover
from profstore.ingest.loader import ingest_version
from profstore.storage.engines import make_engine, upgrade

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO.parent / "shared" / "perfdb"
TARGET_SECONDS = 10.0


@dataclass
class VersionTiming:
    alias: str
    rows_read: int
    rows_accepted: int
    rows_rejected: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


@dataclass
class BenchResult:
    root: str
    versions: list[VersionTiming] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    db_bytes: int = 0
    target_s: float = TARGET_SECONDS

    @property
    def within_target(self) -> bool:
        return self.wall_s < self.target_s

    def lines(self) -> list[str]:
        out = [f"{'version':<12} {'rows':>7} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12}"]
        out += [f"{v.alias:<12} {v.rows_read:>7} {v.wall_s:>8.2f} {v.cpu_s:>8.2f} "
                f"{v.peak_rss_mb:>12.1f}" for v in self.versions]
        verdict = "within" if self.within_target else "OVER"
        out.append(f"{'total':<12} {sum(v.rows_read for v in self.versions):>7} "
                   f"{self.wall_s:>8.2f} {self.cpu_s:>8.2f} {self.peak_rss_mb:>12.1f}")
        out.append(f"database: {self.db_bytes / 1e6:.1f} MB; "
                   f"{verdict} the {self.target_s:.0f} s target")
        return out


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(root: Path, db: Path) -> BenchResult:
    """Ingest every version under ``root`` into the new file ``db``, timing each."""
    engine = make_engine(db)
    upgrade(engine)
    result = BenchResult(str(root))
    started_wall, started_cpu = time.perf_counter(), cpu_seconds()
    for source in discover(root):
        wall, cpu = time.perf_counter(), cpu_seconds()
        summary = ingest_version(engine, source)
        result.versions.append(VersionTiming(
            summary.alias, summary.rows_read, summary.rows_accepted, summary.rows_rejected,
            time.perf_counter() - wall, cpu_seconds() - cpu, peak_rss_mb()))
    result.wall_s = time.perf_counter() - started_wall
    result.cpu_s = cpu_seconds() - started_cpu
    engine.dispose()
    result.peak_rss_mb = peak_rss_mb()
    result.db_bytes = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_ingest",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="corpus directory")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--profile", type=Path, help="write a cProfile dump to this file")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"no corpus at {args.root}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        db = Path(tmp) / "bench.db"
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        result = run(args.root, db)
        if profiler:
            profiler.disable()
            profiler.dump_stats(str(args.profile))
    print("\n".join(result.lines()))
    if args.json:
        args.json.write_text(json.dumps({**asdict(result),
                                         "within_target": result.within_target}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
