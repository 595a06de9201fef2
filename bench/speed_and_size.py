"""``python -m bench``: the DESIGN §10 and issue #11 measurements, on the v0.18 database and
on one ``scale`` times larger, for the current code and (``baseline``) an older revision,
side by side from one run.

The larger database is made the way a user would grow one: the v0.18 directory (and its
HCCL set) is copied under other device names into a temporary root and ingested. That
ingest takes minutes, so that database is kept in a cache directory keyed by the data's
content hash, the scale and a fingerprint of the code (a change in ingest or paths
rebuilds it, replacing the old build); a reused build reports the ingest time measured
when it was built. The v0.18 database itself is ingested afresh in every run.

Every measurement runs ``bench/probe.py`` in a fresh interpreter, so cold open and peak RSS
are per database, and the baseline is timed by the very same probe: its revision is
exported with ``git archive`` into a directory laid out as the ``profstore`` package and
put first on ``PYTHONPATH``. "Uncached" means the Store's caches are emptied before every
call (``Store.clear_cache()``); the version's mapping stays loaded (its load time is
measured on its own). The realistic stream is every distinct leaf of the four workloads
once, on a fresh Store; its answers, compared leaf by leaf, say whether both revisions
agree.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.probe import TARGETS, VERSION
from bench.probe_rounds import measure_rounds
from bench.reingest import reingest_figures
from bench.trees import (
    MEASUREMENT_KEYS,
    WORKLOADS,
    BenchOptions,
    Tree,
    build,
    code_fingerprint,
    db_bytes,
    environment,
    export_tree,
    ingest_corpus,
    probe,
    stage,
    startup,
)


def measure_tree(options: BenchOptions, tree: Tree, workdir: Path, scale: int,
                 log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, copies in (("base", 1), ("scaled", scale)):
        db, figures = build(options, tree, workdir, copies, log)
        if copies == 1:
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

