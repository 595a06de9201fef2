"""``profstore bench``: the DESIGN §10 measurements, side by side on the v0.18 database and
on one ``scale`` times larger, in one run.

The larger database is made the way a user would grow one: the v0.18 directory (and its
HCCL set) is copied under other device names into a temporary root and ingested. That
ingest takes minutes, so that database is kept in a cache directory keyed by the data's
content hash, the scale and a fingerprint of the code (a change in ingest or paths
rebuilds it, replacing the old build); a reused build reports the ingest time measured
when it was built. The v0.18 database itself is ingested afresh in every run.

Each database is measured in a fresh subprocess, so cold open and peak RSS are per
database. "Uncached" means the result, candidate and triangulation caches are emptied
before every call (``Store.clear_cache()`` plus a new triangulation cache); the version's
mapping stays loaded (its load time is measured on its own).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profstore.ingest.discover import HCCL, VLLM, VersionSource, content_hash, discover

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO.parent / "shared" / "perfdb"
WORKLOADS = REPO.parent / "shared" / "workloads"
VERSION = "v0.18"
QUICK_KERNELS = ("RmsNorm", "DynamicQuant", "BatchMatMulV2")
BF16 = "bfloat16"

TARGETS: dict[str, tuple[dict[str, Any], str]] = {
    "exact": ({"op": "tensor_cast.rms_norm.default",
               "args": [{"shape": [128, 7168], "dtype": BF16}, {"shape": [7168], "dtype": BF16},
                        1e-6], "outputs": [{"shape": [128, 7168], "dtype": BF16}]}, "base_exact"),
    "interp_1d": ({"op": "tensor_cast.rms_norm.default",
                   "args": [{"shape": [100, 7168], "dtype": BF16},
                            {"shape": [7168], "dtype": BF16}, 1e-6],
                   "outputs": [{"shape": [100, 7168], "dtype": BF16}]}, "linear_1d"),
    "interp_2d": ({"op": "tensor_cast.dynamic_quantize_symmetric.default",
                   "args": [{"shape": [19, 320], "dtype": BF16}],
                   "outputs": [{"shape": [19, 320], "dtype": "int8"},
                               {"shape": [19], "dtype": "float32"}]}, "simplex_2d"),
    "interp_3d": ({"op": "aten.bmm.default",
                   "args": [{"shape": [16, 2, 96], "dtype": BF16},
                            {"shape": [16, 96, 192], "dtype": BF16}],
                   "outputs": [{"shape": [16, 2, 192], "dtype": BF16}]}, "simplex_3d"),
}
"""Real v0.18 targets: a measured RmsNorm, and interior coordinates answered in 1-D
(RmsNorm tokens), 2-D (DynamicQuant M+K) and 3-D (batched MatMul M+K+N)."""

MEASUREMENT_KEYS = (
    "ingest_s", "ingest_rows", "db_mb", "cold_open_first_lookup_ms", "profile_load_ms",
    "warm_exact_us", "uncached_exact_us", "uncached_interp_1d_us", "uncached_interp_2d_us",
    "uncached_interp_3d_us", "replay_s", "mixed_lookups_per_s",
    "mixed_uncached_lookups_per_s", "peak_rss_mb",
)


@dataclass(frozen=True)
class BenchOptions:
    root: Path = DEFAULT_ROOT
    scale: int = 10
    quick: bool = False
    cache_dir: Path | None = None
    rebuild: bool = False

    @property
    def reps(self) -> int:
        return 3 if self.quick else 20

    @property
    def stream(self) -> int:
        return 300 if self.quick else 10000

    @property
    def workload(self) -> Path:
        return WORKLOADS / ("qwen3_32b_decode.json" if self.quick else "dsv3_decode.json")


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "profstore" / "bench"


def environment() -> dict[str, Any]:
    import platform

    threads = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "machine": platform.machine(), **threads}


def sources(root: Path) -> tuple[VersionSource, VersionSource | None]:
    """The v0.18 directory under ``root`` and the HCCL set of the same device."""
    found = discover(root)
    vllm = next((s for s in found if s.framework == VLLM and s.short_alias == VERSION), None)
    if vllm is None:
        raise FileNotFoundError(f"no {VERSION} version directory under {root}")
    hccl = next((s for s in found if s.framework == HCCL and s.device == vllm.device), None)
    return vllm, hccl


def stage(root: Path, dest: Path, copies: int, kernels: tuple[str, ...] | None) -> Path:
    """Copy the v0.18 directory (and HCCL set) under ``copies`` device names into ``dest``;
    ``kernels`` keeps only those CSVs (and the mapping)."""
    vllm, hccl = sources(root)
    for n in range(copies):
        device = dest / f"BENCH_DEVICE_{n:02d}"
        target = device / VLLM / vllm.directory
        target.mkdir(parents=True)
        for path in vllm.files():
            if kernels is None or path.suffix != ".csv" or path.stem in kernels:
                shutil.copy2(path, target / path.name)
        if hccl is not None:
            shutil.copytree(hccl.path, device / HCCL / hccl.directory)
    return dest


def ingest(root: Path, db: Path) -> dict[str, Any]:
    from profstore.db import make_engine, upgrade
    from profstore.ingest.loader import ingest_path

    engine = make_engine(db)
    upgrade(engine)
    started = time.perf_counter()
    summaries = ingest_path(engine, root)
    seconds = time.perf_counter() - started
    engine.dispose()
    return {"ingest_s": seconds, "ingest_rows": sum(s.rows_read for s in summaries),
            "versions": len(summaries)}


def code_fingerprint() -> str:
    digest = hashlib.sha256()
    for package in ("store", "ingest", "migrations"):
        for path in sorted((REPO / package).rglob("*.py")):
            digest.update(path.relative_to(REPO).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build(options: BenchOptions, workdir: Path, copies: int,
          log: Callable[[str], None]) -> tuple[Path, dict[str, Any]]:
    """An ingested database of ``copies`` device copies. The scaled one (copies > 1, not in
    quick mode) lives in the cache directory and is reused while the data, scale and code
    are unchanged; building it replaces the earlier builds of that scale."""
    vllm, hccl = sources(options.root)
    kernels = QUICK_KERNELS if options.quick else None
    cache = options.cache_dir if copies > 1 and not options.quick else None
    db = workdir / f"bench-{copies}.db"
    if cache is not None:
        key = hashlib.sha256(json.dumps([
            content_hash({p.name: p.read_bytes() for p in vllm.files()}),
            content_hash({p.name: p.read_bytes() for p in hccl.files()}) if hccl else "",
            copies, code_fingerprint()]).encode()).hexdigest()[:20]
        db, meta = cache / f"bench-x{copies}-{key}.db", cache / f"bench-x{copies}-{key}.json"
        if db.is_file() and meta.is_file() and not options.rebuild:
            log(f"reusing the {copies}-copy database built earlier ({db})")
            return db, {**json.loads(meta.read_text()), "cached": True}
        cache.mkdir(parents=True, exist_ok=True)
        for old in cache.glob(f"bench-x{copies}-*"):
            old.unlink()
    staged = stage(options.root, workdir / f"root-{copies}", copies, kernels)
    log(f"ingesting {copies} cop{'y' if copies == 1 else 'ies'} of {vllm.directory} …")
    figures = ingest(staged, db)
    shutil.rmtree(staged)
    if cache is not None:
        meta.write_text(json.dumps(figures))
    return db, {**figures, "cached": False}


def measure_subprocess(db: Path, options: BenchOptions) -> dict[str, Any]:
    """Run ``measure`` in a fresh interpreter (cold caches, its own peak RSS)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    spec = json.dumps({"db": str(db), "reps": options.reps, "stream": options.stream,
                       "workload": str(options.workload)})
    done = subprocess.run([sys.executable, "-m", "profstore.evaluation.bench", spec], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench measurement failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def measure(db: str, reps: int, stream: int, workload: str) -> dict[str, Any]:
    import resource

    from profstore.api import Store
    from profstore.evaluation.replay import load_trace, trace_context, trace_variants
    from profstore.geometry import TriangulationCache
    from profstore.leaf import LeafOp

    leaves = {name: LeafOp.from_json(d) for name, (d, _) in TARGETS.items()}
    out: dict[str, Any] = {}
    started = time.perf_counter()
    store = Store.open(db)
    first = store.lookup(leaves["exact"], VERSION)
    out["cold_open_first_lookup_ms"] = (time.perf_counter() - started) * 1e3
    out["methods"] = {}
    for _ in range(reps):
        store.clear_cache()
        t0 = time.perf_counter()
        store.profile(VERSION)
        out.setdefault("_profile", []).append(time.perf_counter() - t0)
    out["profile_load_ms"] = statistics.median(out.pop("_profile")) * 1e3
    warm = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(100):
            store.lookup(leaves["exact"], VERSION)
        warm.append((time.perf_counter() - t0) / 100)
    out["warm_exact_us"] = _median_us(warm)
    for name, leaf in leaves.items():
        samples = []
        for _ in range(reps):
            store.clear_cache()
            store.dispatcher.runner.triangulations = TriangulationCache(512)
            store.profile(VERSION)
            t0 = time.perf_counter()
            result = store.lookup(leaf, VERSION)
            samples.append(time.perf_counter() - t0)
        out[f"uncached_{name}_us"] = _median_us(samples)
        out["methods"][name] = result.details.get("method") or f"miss:{result.reason}"
    out["first_lookup_method"] = first.details.get("method")
    store.close()
    out.update(_streams(db, workload, stream, leaves, load_trace, trace_context, trace_variants))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _streams(db: str, workload: str, stream: int, leaves: dict, load_trace: Any,
             trace_context: Any, trace_variants: Any) -> dict[str, Any]:
    from profstore.api import Store
    from profstore.evaluation.replay import replay_workload

    with Store.open(db) as store:
        t0 = time.perf_counter()
        replay = replay_workload(store, workload, VERSION)
        replay_s = time.perf_counter() - t0
    pool = list(leaves.values())
    for path in sorted(WORKLOADS.glob("*.json")):
        trace, _ = load_trace(path)
        pool += [v.leaf for v in trace_variants(trace, trace_context(trace, 16, 16), "float16")
                 if v.leaf is not None]
    chosen = random.Random(0).choices(pool, k=stream)
    rates = {}
    for key, cache_size in (("mixed_lookups_per_s", 65536), ("mixed_uncached_lookups_per_s", 0)):
        with Store.open(db, cache_size=cache_size) as store:
            t0 = time.perf_counter()
            for leaf in chosen:
                store.lookup(leaf, VERSION)
            rates[key] = stream / (time.perf_counter() - t0)
    return {"replay_s": replay_s, "replay_calls": replay.calls,
            "replay_unique_shapes": replay.unique_shapes, "mixed_pool": len(pool), **rates}


def run_bench(options: BenchOptions, log: Callable[[str], None] = lambda _: None
              ) -> dict[str, Any]:
    """Measure the base and the scaled database; returns the JSON document."""
    scale = 2 if options.quick and options.scale > 2 else options.scale
    with tempfile.TemporaryDirectory(prefix="profstore-bench-") as tmp:
        results = {}
        for label, copies in (("base", 1), ("scaled", scale)):
            db, figures = build(options, Path(tmp), copies, log)
            log(f"measuring the {label} database …")
            measured = measure_subprocess(db, options)
            size = sum(Path(f"{db}{s}").stat().st_size for s in ("", "-wal")
                       if Path(f"{db}{s}").exists())
            results[label] = {**figures, "db_mb": size / 2**20, **measured, "copies": copies}
    return {"version": VERSION, "root": str(options.root), "scale": scale,
            "quick": options.quick, "targets": {k: v[1] for k, v in TARGETS.items()},
            "workload": options.workload.name, "reps": options.reps,
            "stream": options.stream, "keys": list(MEASUREMENT_KEYS),
            "environment": environment(), **results}


if __name__ == "__main__":
    spec = json.loads(sys.argv[1])
    print(json.dumps(measure(spec["db"], spec["reps"], spec["stream"], spec["workload"])))
