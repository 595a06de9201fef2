"""``profstore bench``: the DESIGN §10 and issue #11 measurements, on the v0.18 database and
on one ``scale`` times larger, for the current code and (``baseline``) an older revision,
side by side from one run.

The larger database is made the way a user would grow one: the v0.18 directory (and its
HCCL set) is copied under other device names into a temporary root and ingested. That
ingest takes minutes, so that database is kept in a cache directory keyed by the data's
content hash, the scale and a fingerprint of the code (a change in ingest or paths
rebuilds it, replacing the old build); a reused build reports the ingest time measured
when it was built. The v0.18 database itself is ingested afresh in every run.

Every measurement runs ``bench_probe`` in a fresh interpreter, so cold open and peak RSS
are per database, and the baseline is timed by the very same probe: its revision is
exported with ``git archive`` into a directory laid out as the ``profstore`` package and
put first on ``PYTHONPATH``. "Uncached" means the Store's caches are emptied before every
call (``Store.clear_cache()``); the version's mapping stays loaded (its load time is
measured on its own). The realistic stream is every distinct leaf of the four workloads
once, on a fresh Store; its answers, compared leaf by leaf, say whether both revisions
agree.
"""

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
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profstore.evaluation import bench_probe
from profstore.evaluation.bench_probe import TARGETS, VERSION
from profstore.ingest.discover import HCCL, VLLM, VersionSource, content_hash, discover

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO.parent / "shared" / "perfdb"
WORKLOADS = REPO.parent / "shared" / "workloads"
QUICK_KERNELS = ("RmsNorm", "DynamicQuant", "BatchMatMulV2")
PACKAGES = {"store": "profstore", "ingest": "profstore/ingest",
            "migrations": "profstore/migrations"}
__all__ = ["TARGETS", "VERSION", "BenchOptions", "run_bench"]

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
        """Measurements of the per-lookup figures after the first (``bench_rounds``)."""
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
    """Run one ``bench_probe`` task in a fresh interpreter on ``tree``'s code."""
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


def measure_tree(options: BenchOptions, tree: Tree, workdir: Path, scale: int,
                 log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, copies in (("base", 1), ("scaled", scale)):
        db, figures = build(options, tree, workdir, copies, log)
        if copies == 1:  # imported here: bench_reingest builds on this module
            from profstore.evaluation.bench_reingest import reingest_figures
            figures.update(reingest_figures(options, tree, workdir, db, figures["ingest_s"],
                                            log))
        log(f"{tree.label}: measuring the {label} database …")
        measured = probe(tree, {"task": "lookups", "db": str(db), "reps": options.reps,
                                "workloads": str(WORKLOADS), "mixed": options.mixed,
                                "replays": True})
        size = db_bytes(db)
        out[label] = {**figures, "db_mb": size / 2**20, "db_per_csv": size / figures["csv_bytes"],
                      **measured, "copies": copies}
    if not options.quick:
        out["corpus"] = ingest_corpus(options.root, tree, workdir, log)
    out["startup"] = startup(tree, 3 if options.quick else 7)
    if options.pg_url:
        log(f"{tree.label}: PostgreSQL …")
        _empty_postgres(options.pg_url)
        out["postgres"] = probe(tree, {"task": "postgres", "url": options.pg_url,
                                       "root": str(stage(options.root, workdir / "pg", 1, None)),
                                       "workloads": str(WORKLOADS)})
        shutil.rmtree(workdir / "pg")
    return out


def _empty_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def agreement(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Leaf-by-leaf agreement of the stream's answers and of each workload replay."""
    old, new = before["base"]["answers"], after["base"]["answers"]
    differ = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    replays = {name: before["base"]["replays"][name] == r
               for name, r in after["base"]["replays"].items() if name in before["base"]["replays"]}
    differ_replays = {name: {k: (before["base"]["replays"][name][k], r[k]) for k in r
                             if k != "seconds" and before["base"]["replays"][name][k] != r[k]}
                      for name, r in after["base"]["replays"].items()}
    return {"leaves": len(new), "same_count": len(old) == len(new), "differing": len(differ),
            "first_differences": [{"index": i, "before": old[i], "after": new[i]}
                                  for i in differ[:10]],
            "replays_agree": all(not d for d in differ_replays.values()) and bool(replays),
            "replay_differences": {k: v for k, v in differ_replays.items() if v}}


def _f(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _stream_1d(base: dict[str, Any]) -> str:
    figures = base.get("stream_1d_uncached_us")
    if not figures:
        return "n/a"
    return (f"{_f(figures['median'])} / {_f(figures['p90'])} "
            f"({base['stream_1d_leaves']} leaves)")


def _figures(side: dict[str, Any] | None, scale: int) -> list[str]:
    """One column of the issue #11 table (see ``ISSUE_ROWS``)."""
    if not side:
        return ["n/a"] * len(ISSUE_ROWS)
    base, scaled = side["base"], side["scaled"]
    stream, pg, corpus = base["stream_us"], side.get("postgres"), side.get("corpus")
    rss = scaled["stream_rss_mb"] / base["stream_rss_mb"]
    return [
        f"{_f(stream['mean'])} / {_f(stream['median'])} / {_f(stream['p90'])}",
        _f(base["uncached_exact_us"]),
        f"{_f(base['regime_cached_1d_us'])} / {_f(base['uncached_interp_1d_us'])}",
        _stream_1d(base),
        _f(base["warm_exact_us"], 2),
        _f(max(base["stream_us"]["max"], scaled["stream_us"]["max"]) / 1e3, 1),
        _f(pg["stream_us"]["median"] / 1e3, 2) if pg else "n/a",
        f"{_f(corpus['ingest_s'], 1) if corpus else 'n/a'} / {_f(scaled['ingest_s'], 1)}"
        f"{' (cached build)' if scaled.get('cached') else ''}",
        f"{_f(corpus['db_per_csv'], 2) if corpus else 'n/a'} / {_f(scaled['db_per_csv'], 2)}",
        f"{_f(side['startup']['import_s'], 2)} / {_f(side['startup']['help_s'], 2)}",
        f"{_f(base['stream_rss_mb'])} → {_f(scaled['stream_rss_mb'])} MB ({rss:.2f}×)",
    ]


ISSUE_ROWS = (
    ("uncached stream mean / median / p90 (us)", "<= 250 / 150 / 400"),
    ("uncached exact hit (us)", "<= 80"),
    ("1-D regime cached / not cached (us)", "<= 130 / 220"),
    ("1-D not cached, the stream's 1-D leaves: median / p90 (us)", "<= 220"),
    ("warm, result cached (us)", "<= 2"),
    ("slowest single lookup, 1x and scaled (ms)", "<= 20"),
    ("PostgreSQL uncached median (ms)", "<= 1"),
    ("ingest whole corpus / scaled v0.18 (s)", "<= 4 / <= 120 (30x)"),
    ("database / CSV bytes, corpus / scaled", "<= 2.5"),
    ("import profstore.api / profstore --help (s)", "<= 0.35"),
    ("RSS of the stream, 1x -> scaled", "<= 1.2x"),
)
"""The rows of issue #11's table of targets, in its order."""


def issue_table(doc: dict[str, Any]) -> list[dict[str, str]]:
    """The issue's table: the baseline's figures and the current code's, one row each."""
    current = {"base": doc["base"], "scaled": doc["scaled"], "startup": doc["startup"],
               "postgres": doc.get("postgres"), "corpus": doc.get("corpus")}
    before = _figures(doc.get("baseline"), doc["scale"])
    after = _figures(current, doc["scale"])
    return [{"what": what, "before": b, "after": a, "target": target}
            for (what, target), b, a in zip(ISSUE_ROWS, before, after)]


def run_bench(options: BenchOptions, log: Callable[[str], None] = lambda _: None
              ) -> dict[str, Any]:
    """Measure the current code (and the baseline revision); returns the JSON document."""
    scale = 2 if options.quick and options.scale > 2 else options.scale
    with tempfile.TemporaryDirectory(prefix="profstore-bench-") as tmp:
        work = Path(tmp)
        trees = [Tree("current", None, code_fingerprint())]
        if options.baseline:
            trees.insert(0, export_tree(options.baseline, work / "baseline"))
        measured = {t.label: measure_tree(options, t, work, scale, log) for t in trees}
        from profstore.evaluation.bench_rounds import measure_rounds  # builds on this module

        measure_rounds(options, trees, measured, work, log)
    current = measured["current"]
    doc: dict[str, Any] = {
        "version": VERSION, "root": str(options.root), "scale": scale, "quick": options.quick,
        "targets": {k: v[1] for k, v in TARGETS.items()}, "reps": options.reps,
        "rounds": options.rounds + 1,
        "stream": current["base"]["stream_leaves"], "keys": list(MEASUREMENT_KEYS),
        "environment": environment(), "base": current["base"], "scaled": current["scaled"],
        "startup": current["startup"], "postgres": current.get("postgres"),
        "corpus": current.get("corpus"),
    }
    if options.baseline:
        before = measured[options.baseline]
        doc["baseline"] = {"revision": options.baseline, **before}
        doc["agreement"] = agreement(before, current)
    return doc


if __name__ == "__main__":
    bench_probe.main(sys.argv[1:])
