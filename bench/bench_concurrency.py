"""Concurrency benchmark: lookup throughput with 1, 2 and 4 reader processes, and the
ingest time of the corpus, on SQLite and (given a URL) on PostgreSQL.

    python -m bench.bench_concurrency [--root ../shared/perfdb] [--pg-url URL]
                                      [--seconds 5] [--readers 1,2,4] [--json FILE]

``--pg-url`` (default: $PROFSTORE_TEST_PG_URL) must let its user CREATE DATABASE: the
benchmark creates ``profstore_bench_<uuid>`` and drops it at the end.

Readers look up a stream drawn from the real workload traces (../shared/workloads) on
v0.18, with the answer cache off. Two regimes per reader count: *uncached* (every cache
is emptied before every lookup, as ``python -m bench`` does: every answer is read from
the database, the worst case and the one that measures the database; the reset and the
mapping reload are not timed) and *first sight* (regime slices cached: a simulator
meeting new shapes of known regimes). Figures are lookups per second of lookup time,
summed over the readers. On a shared machine the reader count that helps is bounded by
the free cores, so the core count is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from profstore.api import Store
from profstore.evaluation.replay import load_trace, trace_context, trace_variants
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.storage.engines import make_engine, upgrade
from profstore.storage.urls import redact_url
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO.parent / "shared" / "perfdb"
WORKLOADS = REPO.parent / "shared" / "workloads"
VERSION = "v0.18"
MODES = ("uncached", "first_sight")


@dataclass
class BackendFigures:
    backend: str
    ingest_s: float
    lookups_per_s: dict[str, dict[int, float]] = field(default_factory=dict)


def workload_leaves() -> list[dict]:
    """Every shape variant of the real traces, as descriptors (picklable for workers)."""
    leaves = []
    for path in sorted(WORKLOADS.glob("*.json")):
        trace, _ = load_trace(path)
        leaves += [v.leaf.to_json() for v in trace_variants(trace, trace_context(trace, 16, 16),
                                                              "float16") if v.leaf is not None]
    return leaves


def reader(url: str, mode: str, leaves: list[dict], seconds: float, seed: int,
           ready, go, out) -> None:
    """Open, signal ``ready``, then look up a random stream for ``seconds`` after ``go``;
    report lookups per second of time spent in ``lookup``."""
    stream = [LeafOp.from_json(d) for d in random.Random(seed).choices(leaves, k=20000)]
    with Store.open(url, cache_size=0) as store:
        store.lookup(stream[0], VERSION)
        ready.put(seed)
        go.wait()
        done, busy, ends = 0, 0.0, time.perf_counter() + seconds
        while time.perf_counter() < ends:
            if mode == "uncached":
                store.clear_cache()
                store.profile(VERSION)
            started = time.perf_counter()
            store.lookup(stream[done % len(stream)], VERSION)
            busy += time.perf_counter() - started
            done += 1
    out.put(done / busy)


def throughput(url: str, mode: str, readers: int, leaves: list[dict], seconds: float) -> float:
    context = multiprocessing.get_context("spawn")
    ready, go, out = context.Queue(), context.Event(), context.Queue()
    workers = [context.Process(target=reader,
                               args=(url, mode, leaves, seconds, i, ready, go, out))
               for i in range(readers)]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.get(timeout=300)
    go.set()
    total = sum(out.get(timeout=seconds + 120) for _ in workers)
    for worker in workers:
        worker.join()
    return total


def timed_ingest(url: str, root: Path) -> float:
    engine = make_engine(url)
    try:
        upgrade(engine)
        started = time.perf_counter()
        ingest_path(engine, root)
        return time.perf_counter() - started
    finally:
        engine.dispose()


def measure(backend: str, url: str, root: Path, counts: list[int], seconds: float,
            leaves: list[dict], log) -> BackendFigures:
    figures = BackendFigures(backend, timed_ingest(url, root))
    log(f"{backend}: ingest {figures.ingest_s:.1f} s")
    for mode in MODES:
        figures.lookups_per_s[mode] = {}
        for n in counts:
            rate = throughput(url, mode, n, leaves, seconds)
            figures.lookups_per_s[mode][n] = rate
            log(f"{backend}: {mode:<11} {n} reader(s): {rate:,.0f} lookups/s")
    return figures


class PostgresDatabase:
    """A benchmark database created through an admin URL and dropped on exit."""

    def __init__(self, admin_url: str) -> None:
        self.admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        self.name = f"profstore_bench_{uuid.uuid4().hex[:12]}"
        self.url = make_url(admin_url).set(database=self.name).render_as_string(
            hide_password=False)

    def __enter__(self) -> str:
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))
        return self.url

    def __exit__(self, *exc: object) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        self.admin.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--pg-url", default=os.environ.get("PROFSTORE_TEST_PG_URL"))
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--readers", default="1,2,4")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.readers.split(",")]
    leaves = workload_leaves()

    def log(line: str) -> None:
        print(line, flush=True)

    log(f"{os.cpu_count()} cores; {len(leaves)} workload shapes; {args.seconds:.0f} s per run")
    results = []
    with tempfile.TemporaryDirectory(prefix="profstore-bench-") as tmp:
        results.append(measure("sqlite", str(Path(tmp) / "bench.db"), args.root, counts,
                               args.seconds, leaves, log))
    if args.pg_url:
        log(f"postgresql: {redact_url(args.pg_url)}")
        with PostgresDatabase(args.pg_url) as url:
            results.append(measure("postgresql", url, args.root, counts, args.seconds,
                                   leaves, log))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
