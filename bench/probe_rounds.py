"""The repeated figures of ``python -m bench``: the per-lookup timings and the corpus
ingest, measured again in rounds that alternate the trees.

This machine's speed drifts by up to 2× over minutes (another tenant's load): a figure
measured once per tree compares two moments, not two revisions. So after the first
measurement of every tree, ``rounds`` more are taken, the trees' order swapped each round,
and the table reports each figure's median over all of them; every measurement stays in
the JSON (``rounds``) beside it. The slowest single lookup is the largest of any round,
not a median. The scaled database's ingest (minutes) and the startup figures (already a
median of seven runs) are measured once.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.trees import WORKLOADS, BenchOptions, Tree, database_path, ingest_corpus, probe

MEDIAN_KEYS = ("uncached_exact_us", "uncached_interp_1d_us", "regime_cached_1d_us",
               "warm_exact_us")
"""Figures of the v0.18 database reported as their median over the rounds."""
STATS_KEYS = ("stream_us", "stream_1d_uncached_us")
"""Summaries (mean, median, p90, max) reported stat by stat over the rounds."""


def measure_rounds(options: BenchOptions, trees: Sequence[Tree],
                   measured: dict[str, dict[str, Any]], workdir: Path,
                   log: Callable[[str], None]) -> None:
    """``options.rounds`` more measurements of every tree, folded into ``measured``."""
    taken: dict[str, list[dict[str, Any]]] = {t.label: [] for t in trees}
    for number in range(options.rounds):
        for tree in trees if number % 2 == 0 else trees[::-1]:
            log(f"{tree.label}: round {number + 2} of {options.rounds + 1} …")
            db = database_path(workdir, tree, 1)
            again = probe(tree, {"task": "again", "db": str(db), "reps": options.reps,
                                       "workloads": str(WORKLOADS)})
            if not options.quick:
                again["corpus_ingest_s"] = ingest_corpus(options.root, tree, workdir,
                                                               log)["ingest_s"]
            taken[tree.label].append(again)
    for tree in trees:
        fold(measured[tree.label], taken[tree.label])


def fold(side: dict[str, Any], rounds: list[dict[str, Any]]) -> None:
    """Replace ``side``'s repeated figures by their median over the first measurement and
    ``rounds`` (the slowest lookup by the largest); keep every measurement."""
    base, corpus = side["base"], side.get("corpus")
    first = {key: base.get(key) for key in (*MEDIAN_KEYS, *STATS_KEYS)}
    if corpus is not None:
        first["corpus_ingest_s"] = corpus["ingest_s"]
    every = [first, *rounds]
    base["rounds"] = every
    for key in MEDIAN_KEYS:
        base[key] = statistics.median(r[key] for r in every)
    for key in STATS_KEYS:
        if all(r.get(key) for r in every):
            base[key] = _stats(r[key] for r in every)
    if corpus is not None and all("corpus_ingest_s" in r for r in every):
        corpus["ingest_s"] = statistics.median(r["corpus_ingest_s"] for r in every)


def _stats(summaries: Any) -> dict[str, float]:
    listed = list(summaries)
    out = {name: statistics.median(s[name] for s in listed) for name in ("mean", "median", "p90")}
    out["max"] = max(s["max"] for s in listed)
    return out
