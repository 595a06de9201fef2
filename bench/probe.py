"""The measurements of ``python -m bench`` that run against whichever ``profstore`` is first
on ``sys.path``: the current tree, or an older one exported by ``git archive``.

Run as a script in a fresh interpreter (``python bench/probe.py '<json spec>'``) it prints
one JSON document. It uses only the public API every revision since the lookup rework has
(``Store.open``, ``lookup``, ``clear_cache``, ``profile``, the ingest loader and the replay
helpers), so the same code times the old and the new implementation in one bench run, and
the answers it returns let the bench check that both agree leaf by leaf.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

VERSION = "v0.18"
BF16 = "bfloat16"
FILLS = ("bfloat16", "float16")
CONTEXTS = ((16, 16), (8, 8), (None, None))
"""The realistic stream: every shape variant of the four workloads, under two fill dtypes and
three (num_devices, ep_size) contexts, each distinct leaf once."""

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


def rms_norm(tokens: int) -> dict[str, Any]:
    """A 1-D RmsNorm target between measured token counts (tokens 65..127 are not rows)."""
    return {"op": "tensor_cast.rms_norm.default",
            "args": [{"shape": [tokens, 7168], "dtype": BF16}, {"shape": [7168], "dtype": BF16},
                     1e-6], "outputs": [{"shape": [tokens, 7168], "dtype": BF16}]}


def ingest(root: str, db: str) -> dict[str, Any]:
    from profstore.ingest.loader import ingest_path

    engines = _first_module("profstore.storage.engines", "profstore.db")
    make_engine, upgrade = engines.make_engine, engines.upgrade

    engine = make_engine(db)
    upgrade(engine)
    started, cpu = time.perf_counter(), _cpu_seconds()
    summaries = ingest_path(engine, Path(root))
    seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu
    engine.dispose()
    return {"ingest_s": seconds, "ingest_cpu_s": cpu,
            "ingest_rows": sum(s.rows_read for s in summaries),
            "rows_accepted": sum(s.rows_accepted for s in summaries),
            "rows_rejected": sum(s.rows_rejected for s in summaries),
            "versions": len(summaries)}


def _first_module(*names: str) -> Any:
    """The first of ``names`` that imports: the probe also times revisions from before the
    package was split into layers, where the engines lived in ``profstore.db``."""
    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    return importlib.import_module(names[-1])


def _cpu_seconds() -> float:
    """CPU of this process and of its finished children (ingest's worker processes)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def stream_leaves(workloads: str) -> list[Any]:
    from profstore.evaluation.replay import load_trace, trace_context, trace_variants

    leaves: dict[Any, None] = {}
    for path in sorted(Path(workloads).glob("*.json")):
        trace, _ = load_trace(path)
        for fill in FILLS:
            for devices, ep in CONTEXTS:
                for v in trace_variants(trace, trace_context(trace, devices, ep), fill):
                    if v.leaf is not None:
                        leaves.setdefault(v.leaf, None)
    return list(leaves)


def answer(result: Any) -> list[Any]:
    """What must not change: latency (to 1e-9 relative), source, reason, method."""
    latency = result.latency_us
    return [None if latency is None else float(f"{latency:.10g}"),
            None if result.source is None else result.source.value,
            None if result.reason is None else result.reason.value,
            result.details.get("method")]


def _stats_us(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"mean": statistics.fmean(ordered) * 1e6, "median": statistics.median(ordered) * 1e6,
            "p90": ordered[int(0.9 * (len(ordered) - 1))] * 1e6, "max": ordered[-1] * 1e6}


def _timed(fn: Callable[..., Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def realistic_stream(db: str, url: str | None, workloads: str) -> dict[str, Any]:
    """Every leaf of the stream once, on a fresh Store (no result is cached for it)."""
    from profstore.api import Store

    leaves = stream_leaves(workloads)
    times, answers = [], []
    with Store.open(url or db) as store:
        store.profile(VERSION)
        cpu = time.process_time()
        for leaf in leaves:
            seconds, result = _timed(lambda leaf=leaf: store.lookup(leaf, VERSION))
            times.append(seconds)
            answers.append(answer(result))
        cpu = time.process_time() - cpu
    return {"stream_leaves": len(leaves), "stream_us": _stats_us(times),
            "stream_cpu_mean_us": cpu / max(len(leaves), 1) * 1e6, "answers": answers}


def _uncached(store: Any, leaf: Any, reps: int) -> tuple[float, Any]:
    samples, result = [], None
    for _ in range(reps):
        store.clear_cache()
        store.profile(VERSION)
        seconds, result = _timed(lambda: store.lookup(leaf, VERSION))
        samples.append(seconds)
    return statistics.median(samples) * 1e6, result


def targets(db: str, reps: int) -> dict[str, Any]:
    from profstore import LeafOp
    from profstore.api import Store

    leaves = {name: LeafOp.from_json(d) for name, (d, _) in TARGETS.items()}
    out: dict[str, Any] = {"methods": {}}
    with Store.open(db) as store:
        for name, leaf in leaves.items():
            out[f"uncached_{name}_us"], result = _uncached(store, leaf, reps)
            out["methods"][name] = result.details.get("method") or f"miss:{result.reason}"
        store.lookup(leaves["exact"], VERSION)
        warm = []
        for _ in range(reps):
            seconds, _ = _timed(lambda: [store.lookup(leaves["exact"], VERSION)
                                         for _ in range(200)])
            warm.append(seconds / 200)
        out["warm_exact_us"] = statistics.median(warm) * 1e6
        store.clear_cache()
        store.lookup(LeafOp.from_json(rms_norm(66)), VERSION)
        sweep = [LeafOp.from_json(rms_norm(n)) for n in range(67, 67 + reps * 2)]
        cached = [_timed(lambda leaf=leaf: store.lookup(leaf, VERSION))[0] for leaf in sweep]
        out["regime_cached_1d_us"] = statistics.median(cached) * 1e6
    return out


def stream_1d(db: str, workloads: str, reps: int) -> dict[str, Any]:
    """Every leaf of the stream answered by 1-D interpolation, each timed with nothing
    cached (its regime slice included), median over ``reps`` tries per leaf."""
    from profstore.api import Store

    with Store.open(db) as store:
        one_d = [leaf for leaf in stream_leaves(workloads)
                 if store.lookup(leaf, VERSION).details.get("method") == "linear_1d"]
        per_leaf = [_uncached(store, leaf, reps)[0] / 1e6 for leaf in one_d]
    return {"stream_1d_leaves": len(one_d),
            "stream_1d_uncached_us": _stats_us(per_leaf) if per_leaf else None}


def replays(db: str, workloads: str) -> dict[str, Any]:
    from profstore.api import Store
    from profstore.evaluation.replay import replay_workload

    out = {}
    for path in sorted(Path(workloads).glob("*.json")):
        with Store.open(db) as store:
            seconds, report = _timed(lambda path=path: replay_workload(store, path, VERSION))
        out[path.stem] = {"seconds": seconds, "calls": report.calls,
                          "unique_shapes": report.unique_shapes,
                          "latency_us": float(f"{report.total_latency_us:.10g}"),
                          "sources": report.source_by_calls}
    return out


def mixed(db: str, workloads: str, count: int) -> dict[str, float]:
    """The old mixed-stream rates: ``count`` draws from the stream, with and without the
    result cache."""
    from profstore.api import Store

    chosen = random.Random(0).choices(stream_leaves(workloads), k=count)
    rates = {}
    for key, size in (("mixed_lookups_per_s", 65536), ("mixed_uncached_lookups_per_s", 0)):
        with Store.open(db, cache_size=size) as store:
            seconds, _ = _timed(lambda store=store: [store.lookup(leaf, VERSION)
                                                     for leaf in chosen])
        rates[key] = count / seconds
    return rates


def lookups(spec: dict[str, Any]) -> dict[str, Any]:
    db, workloads = spec["db"], spec["workloads"]
    from profstore import LeafOp
    from profstore.api import Store

    started = time.perf_counter()
    with Store.open(db) as store:
        first = store.lookup(LeafOp.from_json(TARGETS["exact"][0]), VERSION)
        out: dict[str, Any] = {"cold_open_first_lookup_ms": (time.perf_counter() - started) * 1e3,
                               "first_lookup_method": first.details.get("method")}
        loads = []
        for _ in range(spec["reps"]):
            store.clear_cache()
            loads.append(_timed(lambda: store.profile(VERSION))[0])
        out["profile_load_ms"] = statistics.median(loads) * 1e3
    out.update(per_lookup(db, workloads, spec["reps"]))
    if spec.get("replays", True):
        out["replays"] = replays(db, workloads)
        out["replay_s"] = sum(r["seconds"] for r in out["replays"].values())
    out.update(mixed(db, workloads, spec["mixed"]))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def per_lookup(db: str, workloads: str, reps: int) -> dict[str, Any]:
    """The realistic stream (and the RSS it reached), the targets and the stream's 1-D
    leaves: what ``lookups`` measures first and ``again`` measures once more."""
    out = realistic_stream(db, None, workloads)
    out["stream_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.update(targets(db, reps))
    out.update(stream_1d(db, workloads, min(reps, 5)))
    return out


def again(spec: dict[str, Any]) -> dict[str, Any]:
    """The per-lookup figures of ``lookups`` once more (``bench/probe_rounds.py``)."""
    out = per_lookup(spec["db"], spec["workloads"], spec["reps"])
    del out["answers"]
    return out


def postgres(spec: dict[str, Any]) -> dict[str, Any]:
    """Ingest the root into a PostgreSQL database and time the realistic stream on it."""
    figures = ingest(spec["root"], spec["url"])
    figures.update(realistic_stream("", spec["url"], spec["workloads"]))
    return figures


def answer_line(version: str, leaf: Any, result: Any) -> str:
    """One answer in full: latency (``repr``), source, reason and every detail."""
    latency = result.latency_us
    return json.dumps({
        "version": version, "leaf": leaf.to_json(),
        "latency_us": None if latency is None else repr(float(latency)),
        "source": None if result.source is None else result.source.value,
        "reason": None if result.reason is None else result.reason.value,
        "details": result.details,
    }, sort_keys=True, default=repr)


def answers(spec: dict[str, Any]) -> dict[str, Any]:
    """Every leaf of the stream, the targets and a token sweep, asked of every version of
    the database on a fresh Store, written to ``spec["out"]`` one JSON line each."""
    from profstore import LeafOp, Store

    leaves = stream_leaves(spec["workloads"])
    leaves += [LeafOp.from_json(d) for d, _ in TARGETS.values()]
    leaves += [LeafOp.from_json(rms_norm(n)) for n in range(1, 300, 7)]
    lines = 0
    with Store.open(spec["db"]) as store, open(spec["out"], "w", encoding="utf-8") as sink:
        for version in store.versions():
            for leaf in leaves:
                sink.write(answer_line(version, leaf, store.lookup(leaf, version)) + "\n")
                lines += 1
    return {"answers": lines}


TASKS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "ingest": lambda s: ingest(s["root"], s["db"]),
    "lookups": lookups,
    "again": again,
    "postgres": postgres,
    "answers": answers,
}


def main(argv: Iterable[str]) -> None:
    spec = json.loads(next(iter(argv)))
    print(json.dumps(TASKS[spec["task"]](spec)))


if __name__ == "__main__":
    main(sys.argv[1:])
