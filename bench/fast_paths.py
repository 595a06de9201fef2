"""What each remaining fast path of the lookup saves, per lookup, on the realistic stream.

A fast path stays only where it saves at least 5 % of an uncached lookup (the project's
rule; docs/adr/0099-fast-paths-kept.md). For each, on the v0.18 database: the cost of the
operation with and without the fast path (median of repeated timings), how often one
lookup of the realistic stream (every leaf once, on a fresh Store) performs it, and the
saving as a share of the stream's mean lookup, measured in the same run.

    python -m bench.fast_paths --db perf.db
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

from profstore import LeafOp, Store
from profstore.lookup import base_exact, nearest_regime, regime_table
from profstore.model import exact_keys
from profstore.model.clock_cache import ClockCache
from profstore.paths import base, generic
from profstore.storage import queries
from profstore.storage import schema as t
from sqlalchemy import select

from bench.probe import VERSION, realistic_stream, rms_norm, stream_leaves
from bench.trees import WORKLOADS


@dataclass(frozen=True)
class Saving:
    name: str
    fast_us: float
    slow_us: float
    per_lookup: float
    lookup_us: float

    @property
    def saved_share(self) -> float:
        return (self.slow_us - self.fast_us) * self.per_lookup / self.lookup_us

    def line(self) -> str:
        return (f"{self.name:<28} {self.fast_us:8.2f} {self.slow_us:8.2f} "
                f"{self.per_lookup:8.2f} {100 * self.saved_share:7.1f} %")


def median_us(fn: Callable[[], Any], repeat: int = 2000) -> float:
    samples = []
    for _ in range(7):
        started = time.perf_counter()
        for _ in range(repeat):
            fn()
        samples.append((time.perf_counter() - started) / repeat)
    return statistics.median(samples) * 1e6


@contextmanager
def counted(owner: Any, name: str, counts: dict[str, int]) -> Iterator[None]:
    """Count the calls of ``owner.name`` (a function or a property) while inside."""
    original = owner.__dict__[name]
    inner = original.fget if isinstance(original, property) else original
    assert inner is not None

    def counting(*args: Any, **kwargs: Any) -> Any:
        counts[name] = counts.get(name, 0) + 1
        return inner(*args, **kwargs)
    with patch.object(owner, name, property(counting) if isinstance(original, property)
                      else counting):
        yield


@contextmanager
def recorded(calls: list[tuple[Any, Any, str]]) -> Iterator[None]:
    """Record the arguments of every target signature the lookups compute."""
    original = exact_keys.target_signature

    def recording(leaf: Any, entry: Any, kernel: str) -> Any:
        calls.append((leaf, entry, kernel))
        return original(leaf, entry, kernel)
    with patch.object(base_exact, "target_signature", recording), \
            patch.object(generic, "target_signature", recording):
        yield


def statement_us(store: Store) -> tuple[float, float]:
    """One regime-pack read on the DBAPI cursor, and through ``Connection.execute``."""
    engine = store.engine
    with engine.connect() as conn:
        regime = conn.execute(select(t.regime.c.profile_id, t.regime.c.kernel_type,
                                     t.regime.c.path, t.regime.c.regime_key).limit(1)).one()
        params = dict(profile=regime[0], kernel=regime[1], path=regime[2], regime=regime[3])
        statement = queries._REGIME_PACK
        compiled = statement._for(engine.dialect)
        raw = conn.connection.dbapi_connection
        assert raw is not None
        bound: Any = (tuple(params[name] for name in compiled.order)
                      if compiled.order is not None else params)

        def dbapi() -> Any:
            cursor = raw.cursor()
            cursor.execute(compiled.sql, bound)
            rows = cursor.fetchall()
            cursor.close()
            return rows

        return (median_us(dbapi, 500),
                median_us(lambda: conn.execute(statement.stmt, params).all(), 500))


def measure(db: str, workloads: Path) -> list[Saving]:
    leaves = stream_leaves(str(workloads))
    n = len(leaves)
    lookup_us = statistics.median(realistic_stream(db, None, str(workloads))["stream_us"]["mean"]
                                  for _ in range(5))
    counts: dict[str, int] = {}
    signatures: list[tuple[Any, Any, str]] = []
    with Store.open(db) as store:
        store.lookup(leaves[0], VERSION)
        warm_us = median_us(lambda: store.lookup(leaves[0], VERSION), 500)
        with counted(base.Extraction, "regime_key", counts), \
                counted(queries.Statement, "rows", counts), \
                counted(LeafOp, "__hash__", counts), recorded(signatures):
            store.clear_cache()
            store.profile(VERSION)
            for leaf in leaves:
                store.lookup(leaf, VERSION)
        fast_sql, slow_sql = statement_us(store)
    leaf = leaves[len(leaves) // 2]
    hash(leaf)
    fields = (leaf.op, leaf.args, leaf.kwargs, leaf.outputs, leaf.context)
    kept_hash, new_hash = median_us(lambda: hash(leaf)), median_us(lambda: hash(fields))
    extraction = base.Extraction({"dtype": "DT_BF16", "format": "ND", "hidden": 7168},
                                 (128.0,))
    memo = {"kept": extraction.regime_key}
    memo_read = median_us(lambda: memo.get("kept"))
    keys = [(id(leaf), kernel, entry.tc_input_count) for leaf, entry, kernel in signatures]
    signature_us = median_us(lambda: [exact_keys.target_signature(*a) for a in signatures],
                             20) / len(signatures)
    return [
        Saving("DBAPI statements", fast_sql, slow_sql, counts.get("rows", 0) / n, lookup_us),
        Saving("leaf hash kept on the leaf", kept_hash, new_hash,
               counts.get("__hash__", 0) / n, lookup_us),
        Saving("leaf hash, warm lookup", kept_hash, new_hash, 1.0, warm_us),
        Saving("regime-key memo (reverted)", memo_read, median_us(lambda: extraction.regime_key),
               counts.get("regime_key", 0) / n, lookup_us),
        regime_text_cache(db),
        nearest_regime_cache(db),
        Saving("signature memo (reverted)", memo_read, signature_us,
               (len(keys) - len(set(keys))) / n, lookup_us),
    ]


def spelled(regime: Any) -> str:
    """``regime_key`` without its text cache."""
    return json.dumps(regime, sort_keys=True, separators=(",", ":"), default=list)


def regime_text_cache(db: str, sweep: int = 300, rounds: int = 6) -> Saving:
    """The text cache of ``regime_key`` on the lookups it serves most: a 1-D sweep in a
    regime already read (RmsNorm tokens 67 ..), with and without it, alternating."""
    leaves = [LeafOp.from_json(rms_norm(tokens)) for tokens in range(66, 67 + sweep)]

    def patched(cached: bool) -> Any:
        return patch.object(base, "regime_key", base.regime_key if cached else spelled)
    fast, slow = alternating(db, leaves, patched, rounds)
    return Saving("regime-key text cache, 1-D", fast, slow, 1.0, slow)


def alternating(db: str, leaves: list[LeafOp], patched: Callable[[bool], Any],
                rounds: int) -> tuple[float, float]:
    """Median µs a lookup of ``leaves[1:]`` with the fast path and without (``patched``),
    alternating, each sweep on a cleared Store after ``leaves[0]`` read the regime."""
    times: dict[bool, list[float]] = {True: [], False: []}
    with Store.open(db) as store:
        for n in range(rounds):
            for cached in (n % 2 == 0, n % 2 == 1):
                with patched(cached):
                    store.clear_cache()
                    store.lookup(leaves[0], VERSION)
                    started = time.perf_counter()
                    for leaf in leaves[1:]:
                        store.lookup(leaf, VERSION)
                    times[cached].append((time.perf_counter() - started)
                                         / (len(leaves) - 1) * 1e6)
    return statistics.median(times[True]), statistics.median(times[False])


def _mul_fp32(tokens: int) -> dict[str, Any]:
    """A decode search's fp32 ``aten.mul.Tensor`` (RMSNorm's scale): v0.18 measures no fp32
    regime of it, so every batch size is a regime miss with nearest regimes."""
    big, small = [1, tokens, 5120], [1, tokens, 1]
    spec = {"dtype": "float32", "format": None}
    return {"op": "aten.mul.Tensor", "args": [{"shape": big, **spec}, {"shape": small, **spec}],
            "outputs": [{"shape": big, **spec}], "context": {"ep_size": 8, "tp_size": 4}}


def nearest_regime_cache(db: str, sweep: int = 200, rounds: int = 6) -> Saving:
    """``closest``'s cache and per-kernel regime tables (lookup/regime_table.py) on the
    lookups they serve: regime misses of one op at successive shapes, as a search asks
    them, with and without (no cache, the table built again at each call), alternating."""
    leaves = [LeafOp.from_json(_mul_fp32(tokens)) for tokens in range(1, 2 + sweep)]
    with Store.open(db) as store:
        assert store.lookup(leaves[0], VERSION).details.get("nearest_regimes")

    @contextmanager
    def patched(cached: bool) -> Iterator[None]:
        size = 4096 if cached else 0
        with patch.object(nearest_regime, "_CLOSEST", ClockCache(size)), \
                patch.object(regime_table, "_TABLES", ClockCache(size)):
            yield
    fast, slow = alternating(db, leaves, patched, rounds)
    return Saving("nearest-regime cache, misses", fast, slow, 1.0, slow)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fast_paths",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a database holding the corpus")
    parser.add_argument("--workloads", type=Path, default=WORKLOADS)
    args = parser.parse_args(argv)
    savings = measure(args.db, args.workloads)
    print(f"realistic stream (each leaf once, fresh Store): {savings[0].lookup_us:.1f} us a "
          f"lookup; warm lookup (answer cached): {savings[2].lookup_us:.2f} us")
    print(f"{'fast path':<28} {'fast us':>8} {'slow us':>8} {'/lookup':>8} {'saved':>9}")
    print("(the text cache's row times whole 1-D lookups in a regime already read; the "
          "nearest-regime row whole regime misses at successive shapes)")
    for saving in savings:
        print(saving.line())


if __name__ == "__main__":
    main()
