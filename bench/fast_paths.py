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
from profstore.lookup import base_exact
from profstore.model import exact_keys
from profstore.paths import base, generic
from profstore.storage import queries
from profstore.storage import schema as t
from sqlalchemy import select

from bench.probe import VERSION, rms_norm, stream_leaves
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
    if isinstance(original, property):
        getter = original.fget
        assert getter is not None

        def counting_property(self: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            return getter(self)
        setattr(owner, name, property(counting_property))
    else:
        def counting(*args: Any, **kwargs: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            return original(*args, **kwargs)
        setattr(owner, name, counting)
    try:
        yield
    finally:
        setattr(owner, name, original)


def stream_mean_us(db: str, leaves: list[Any]) -> float:
    """The realistic stream's mean lookup: every leaf once, on a fresh Store."""
    with Store.open(db) as store:
        store.profile(VERSION)  # the mapping loaded, as in a running simulator
        started = time.perf_counter()
        for leaf in leaves:
            store.lookup(leaf, VERSION)
        return (time.perf_counter() - started) / len(leaves) * 1e6


def measure(db: str, workloads: Path) -> list[Saving]:
    leaves = stream_leaves(str(workloads))
    counts: dict[str, int] = {}
    lookup_us = statistics.median(stream_mean_us(db, leaves) for _ in range(5))
    signatures: list[tuple[int, str, int | None]] = []
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
        engine = store.engine
        with engine.connect() as conn:
            regime = conn.execute(select(t.regime.c.profile_id, t.regime.c.kernel_type,
                                         t.regime.c.path, t.regime.c.regime_key).limit(1)).one()
            params = dict(profile=regime[0], kernel=regime[1], path=regime[2],
                          regime=regime[3])
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

            fast_sql = median_us(dbapi, 500)
            slow_sql = median_us(lambda: conn.execute(statement.stmt, params).all(), 500)
    leaf = leaves[len(leaves) // 2]
    hash(leaf)
    fields = (leaf.op, leaf.args, leaf.kwargs, leaf.outputs, leaf.context)
    extraction = base.Extraction({"dtype": "DT_BF16", "format": "ND", "hidden": 7168},
                                 (128.0,))
    memo = {"regime_key": extraction.regime_key}
    n = len(leaves)
    repeats = len(signatures) - len(set(signatures))
    every = list(_signature_args)
    signature_us = median_us(lambda: [exact_keys.target_signature(*a) for a in every],
                             20) / len(every)
    return [
        Saving("DBAPI statements", fast_sql, slow_sql, counts.get("rows", 0) / n, lookup_us),
        Saving("leaf hash kept on the leaf", median_us(lambda: hash(leaf)),
               median_us(lambda: hash(fields)), counts.get("__hash__", 0) / n, lookup_us),
        Saving("leaf hash, warm lookup", median_us(lambda: hash(leaf)),
               median_us(lambda: hash(fields)), 1.0, warm_us),
        Saving("regime-key memo (reverted)", median_us(lambda: memo.get("regime_key")),
               median_us(lambda: extraction.regime_key),
               counts.get("regime_key", 0) / n, lookup_us),
        regime_text_cache(db),
        Saving("signature memo (reverted)", median_us(lambda: memo.get("regime_key")),
               signature_us, repeats / n, lookup_us),
    ]


def spelled(regime: Any) -> str:
    """``regime_key`` without its text cache."""
    return json.dumps(regime, sort_keys=True, separators=(",", ":"), default=list)


def regime_text_cache(db: str, sweep: int = 300, rounds: int = 6) -> Saving:
    """The text cache of ``regime_key`` on the lookups it serves most: a 1-D sweep in a
    regime already read (RmsNorm tokens 67 ..), with and without it, alternating."""
    kept = base.regime_key
    times: dict[bool, list[float]] = {True: [], False: []}
    leaves = [LeafOp.from_json(rms_norm(tokens)) for tokens in range(67, 67 + sweep)]
    with Store.open(db) as store:
        for n in range(rounds):
            for cached in (n % 2 == 0, n % 2 == 1):
                base.regime_key = kept if cached else spelled
                store.clear_cache()
                store.lookup(LeafOp.from_json(rms_norm(66)), VERSION)
                started = time.perf_counter()
                for leaf in leaves:
                    store.lookup(leaf, VERSION)
                times[cached].append((time.perf_counter() - started) / sweep * 1e6)
        base.regime_key = kept
    fast, slow = statistics.median(times[True]), statistics.median(times[False])
    return Saving("regime-key text cache, 1-D", fast, slow, 1.0, slow)


_signature_args: list[tuple[Any, ...]] = []


@contextmanager
def recorded(signatures: list[tuple[int, str, int | None]]) -> Iterator[None]:
    """Record every target signature the lookups compute: (leaf, kernel, input count)."""
    original = exact_keys.target_signature

    def recording(leaf: Any, entry: Any, kernel: str) -> Any:
        signatures.append((id(leaf), kernel, entry.tc_input_count))
        _signature_args.append((leaf, entry, kernel))
        return original(leaf, entry, kernel)
    with patch.object(base_exact, "target_signature", recording), \
            patch.object(generic, "target_signature", recording):
        yield


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
    print("(the text cache's row times whole 1-D lookups in a regime already read)")
    for saving in savings:
        print(saving.line())


if __name__ == "__main__":
    main()
