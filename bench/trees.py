"""The trees a benchmark measures (this checkout, or a git revision exported as the
``profstore`` package), the databases it builds for them, and the probe that times one task
in a fresh interpreter on one tree's code."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profstore.ingest.discover import HCCL, VLLM, VersionSource, content_hash, discover

from bench import probe as bench_probe
from bench.probe import VERSION

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ROOT = REPO.parent / "shared" / "perfdb"
WORKLOADS = REPO.parent / "shared" / "workloads"
QUICK_KERNELS = ("RmsNorm", "DynamicQuant", "BatchMatMulV2")
PACKAGES = {"store": "profstore", "ingest": "profstore/ingest",
            "migrations": "profstore/migrations"}

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
    baseline: str | None = None
    """A git revision of this repository to measure beside the current code."""
    pg_url: str | None = None
    """A PostgreSQL database the bench may empty and fill (both revisions, in turn)."""

    @property
    def reps(self) -> int:
        return 3 if self.quick else 20

    @property
    def mixed(self) -> int:
        return 300 if self.quick else 10000

    @property
    def rounds(self) -> int:
        """Measurements of the per-lookup figures after the first (``bench/probe_rounds.py``)."""
        return 1 if self.quick else 4


@dataclass(frozen=True)
class Tree:
    """Code to measure: ``lib`` goes first on PYTHONPATH (None: the installed profstore)."""

    label: str
    lib: Path | None
    fingerprint: str


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "profstore" / "bench"


def environment() -> dict[str, Any]:
    import platform

    threads = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "machine": platform.machine(), "load_average": list(os.getloadavg()), **threads}


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


def csv_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.csv"))


def db_bytes(db: Path) -> int:
    """The SQLite file and its write-ahead log, as they lie on disk."""
    return sum(part.stat().st_size for part in (db, Path(f"{db}-wal")) if part.exists())


def code_fingerprint(source: Path = REPO) -> str:
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((source / package).rglob("*.py")):
            digest.update(path.relative_to(source).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def export_tree(revision: str, dest: Path) -> Tree:
    """``revision`` of this repository as an importable ``profstore`` under ``dest``."""
    done = subprocess.run(["git", "-C", str(REPO), "archive", revision, *PACKAGES],
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git archive {revision}: {done.stderr.decode().strip()}")
    source, lib = dest / "src", dest / "lib"
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(source, filter="data")
    for folder, package in PACKAGES.items():
        shutil.copytree(source / folder, lib / package, dirs_exist_ok=True)
    return Tree(revision, lib, code_fingerprint(source))


def probe(tree: Tree, spec: dict[str, Any]) -> dict[str, Any]:
    """Run one ``bench/probe.py`` task in a fresh interpreter on ``tree``'s code."""
    env = dict(os.environ)
    if tree.lib is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree.lib), *filter(None, [
            os.environ.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, "-P", bench_probe.__file__, json.dumps(spec)],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench probe {spec['task']} ({tree.label}) failed: "
                           f"{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def startup(tree: Tree, runs: int) -> dict[str, float]:
    """Median wall seconds of ``import profstore.api`` and ``profstore --help``."""
    env = dict(os.environ)
    if tree.lib is not None:
        env["PYTHONPATH"] = str(tree.lib)
    out = {}
    for key, args in (("import_s", ["-c", "import profstore.api"]),
                      ("help_s", ["-m", "profstore", "--help"])):
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-P", *args], env=env, capture_output=True,
                           check=True)
            samples.append(time.perf_counter() - t0)
        out[key] = statistics.median(samples)
    return out


def build(options: BenchOptions, tree: Tree, workdir: Path, copies: int,
          log: Callable[[str], None]) -> tuple[Path, dict[str, Any]]:
    """An ingested database of ``copies`` device copies. The scaled one (copies > 1, not in
    quick mode) lives in the cache directory and is reused while the data, scale and code
    are unchanged; building it replaces the earlier builds of that scale and code."""
    vllm, hccl = sources(options.root)
    kernels = QUICK_KERNELS if options.quick else None
    cache = options.cache_dir if copies > 1 and not options.quick else None
    db = database_path(workdir, tree, copies)
    if cache is not None:
        key = hashlib.sha256(json.dumps([
            content_hash({p.name: p.read_bytes() for p in vllm.files()}),
            content_hash({p.name: p.read_bytes() for p in hccl.files()}) if hccl else "",
            copies, tree.fingerprint]).encode()).hexdigest()[:20]
        db, meta = cache / f"bench-x{copies}-{key}.db", cache / f"bench-x{copies}-{key}.json"
        if db.is_file() and meta.is_file() and not options.rebuild:
            log(f"reusing the {copies}-copy database built earlier by {tree.label} ({db})")
            return db, {**json.loads(meta.read_text()), "cached": True}
        cache.mkdir(parents=True, exist_ok=True)
        for old in cache.glob(f"bench-x{copies}-{key}*"):
            old.unlink()
    staged = stage(options.root, workdir / f"root-{tree.fingerprint}-{copies}", copies, kernels)
    log(f"{tree.label}: ingesting {copies} cop{'y' if copies == 1 else 'ies'} of "
        f"{vllm.directory} …")
    figures = {**probe(tree, {"task": "ingest", "root": str(staged), "db": str(db)}),
               "csv_bytes": csv_bytes(staged)}
    shutil.rmtree(staged)
    if cache is not None:
        meta.write_text(json.dumps(figures))
    return db, {**figures, "cached": False}


def database_path(workdir: Path, tree: Tree, copies: int) -> Path:
    """Where ``build`` ingests a database of ``copies`` copies (the scaled one, unless quick,
    lives in the cache directory instead)."""
    return workdir / f"bench-{tree.fingerprint}-{copies}.db"


def ingest_corpus(root: Path, tree: Tree, workdir: Path,
                  log: Callable[[str], None]) -> dict[str, Any]:
    """The whole corpus under ``root`` (every version), ingested into a fresh file."""
    db = workdir / f"corpus-{tree.fingerprint}.db"
    log(f"{tree.label}: ingesting the whole corpus …")
    figures = probe(tree, {"task": "ingest", "root": str(root), "db": str(db)})
    size, csv_size = db_bytes(db), csv_bytes(root)
    db.unlink()
    return {**figures, "db_mb": size / 2**20, "csv_bytes": csv_size,
            "db_per_csv": size / csv_size}
