"""Workers benchmark: N spawn worker processes, each with its own Store (and T threads on
it), looking up uncached answers for a fixed time, on SQLite and on PostgreSQL. Reports
lookups per second (summed over the workers) and the connections held: each worker's pool
at the end, and on PostgreSQL the most profstore sessions the server showed at once.

    python -m bench.bench_workers [--root ../shared/perfdb] [--pg-url URL] [--workers 1,4,16]
                                  [--threads 1] [--seconds 3] [--json FILE]

``--pg-url`` (default: $PROFSTORE_TEST_PG_URL) must let its user CREATE DATABASE (the
benchmark creates a database and drops it). The lookups are the real workload traces'
shapes on v0.18 (../shared/workloads), every answer read from the database.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from profstore.api import Store
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.storage.engines import make_engine
from profstore.storage.urls import redact_url
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from bench.bench_concurrency import DEFAULT_ROOT, VERSION, PostgresDatabase, workload_leaves


@dataclass
class WorkerRun:
    backend: str
    workers: int
    threads: int
    lookups_per_s: float
    pool_connections: int
    """Connections open in the workers' pools at the end, summed."""
    server_sessions_max: int | None
    """PostgreSQL: most profstore sessions on the database at once (None on SQLite)."""
    failures: list[str]


def worker(url: str, leaves: list[dict], seconds: float, threads: int) -> dict:
    """One process: a Store, ``threads`` threads looking up for ``seconds``."""
    store = Store.open(url)
    counts = [0] * threads
    errors: list[Exception] = []

    def loop(index: int) -> None:
        parsed = [LeafOp.from_json(leaf) for leaf in leaves]
        deadline = time.perf_counter() + seconds
        i = index
        try:
            while time.perf_counter() < deadline:
                store.clear_cache()
                store.lookup(parsed[i % len(parsed)], VERSION)
                counts[index] += 1
                i += threads
        except Exception as exc:  # the worker reports it (a thread's error is not raised)
            errors.append(exc)

    started = time.perf_counter()
    running = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        store.close()
        raise errors[0]
    pool = store.engine.pool  # a QueuePool: lookups keep theirs checked out between lookups
    held = int(getattr(pool, "checkedin", lambda: 0)() + getattr(pool, "checkedout", lambda: 0)())
    store.close()
    return {"lookups": sum(counts), "seconds": elapsed, "connections": held}


def _call(args: tuple) -> dict:
    try:
        return worker(*args)
    except Exception as exc:  # reported, not raised: one worker must not hide the others
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}


class SessionSampler(threading.Thread):
    """Counts the database's profstore sessions every 50 ms (PostgreSQL)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.admin = create_engine(url, poolclass=NullPool)
        self.database = make_url(url).database
        self.most = 0
        self.done = threading.Event()

    def run(self) -> None:
        with self.admin.connect() as conn:
            while not self.done.wait(0.05):
                count = conn.execute(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :d AND "
                    "application_name = 'profstore'"), {"d": self.database}).scalar_one()
                self.most = max(self.most, int(count))
                conn.rollback()

    def stop(self) -> int:
        self.done.set()
        self.join()
        self.admin.dispose()
        return self.most


def run_workers(backend: str, url: str, leaves: list[dict], workers: int, threads: int,
                seconds: float, sample: bool = True) -> WorkerRun:
    """``sample``: count the server's sessions (PostgreSQL; it takes one connection)."""
    sampler = SessionSampler(url) if backend == "postgresql" and sample else None
    if sampler is not None:
        sampler.start()
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        results = pool.map(_call, [(url, leaves, seconds, threads)] * workers)
    most = sampler.stop() if sampler is not None else None
    done = [r for r in results if "error" not in r]
    return WorkerRun(backend, workers, threads,
                     sum(r["lookups"] / r["seconds"] for r in done),
                     sum(r["connections"] for r in done), most,
                     [r["error"] for r in results if "error" in r])


def ingest(url: str, root: Path) -> None:
    engine = make_engine(url)
    try:
        ingest_path(engine, root, upgrade_schema=True)
    finally:
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--pg-url", default=os.environ.get("PROFSTORE_TEST_PG_URL"))
    parser.add_argument("--workers", default="1,4,16")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    leaves, runs = workload_leaves(), []
    print(f"{os.cpu_count()} cores; {len(leaves)} shapes; {args.seconds:g} s per run", flush=True)

    def measure(backend: str, url: str) -> None:
        ingest(url, args.root)
        for n in (int(w) for w in args.workers.split(",")):
            run = run_workers(backend, url, leaves, n, args.threads, args.seconds)
            runs.append(run)
            sessions = "" if run.server_sessions_max is None else \
                f", at most {run.server_sessions_max} server sessions"
            print(f"{backend}: {n} workers x {args.threads} threads: {run.lookups_per_s:,.0f} "
                  f"lookups/s, {run.pool_connections} pooled connections{sessions}, "
                  f"{len(run.failures)} failed", flush=True)

    with tempfile.TemporaryDirectory(prefix="profstore-bench-") as tmp:
        measure("sqlite", str(Path(tmp) / "bench.db"))
    if args.pg_url:
        print(f"postgresql: {redact_url(args.pg_url)}", flush=True)
        with PostgresDatabase(args.pg_url) as url:
            measure("postgresql", url)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=2) + "\n")
    return 1 if any(r.failures for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
