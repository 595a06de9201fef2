"""``python -m bench``: ingest and lookup timings on the v0.18 database and on one ``--scale``
times larger, optionally beside a ``--baseline`` git revision measured by the same probe.

    python -m bench --root ../shared/perfdb --baseline main --json bench.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from profstore.cli.output import print_table
from profstore.presentation.text_table import Column, to_json

from bench import speed_and_size as benchmod
from bench import trees
from bench.probe import VERSION

BENCH_ROWS = [("ingest_s", "ingest (s)"), ("reingest_s", "re-ingest changed (s)"),
              ("ingest_rows", "rows ingested"),
              ("db_mb", "database (MiB)"), ("cold_open_first_lookup_ms", "cold open + 1st (ms)"),
              ("profile_load_ms", "mapping load (ms)"), ("warm_exact_us", "warm exact (us)"),
              ("uncached_exact_us", "uncached exact (us)"),
              ("uncached_interp_1d_us", "uncached 1-D (us)"),
              ("uncached_interp_2d_us", "uncached 2-D (us)"),
              ("uncached_interp_3d_us", "uncached 3-D (us)"),
              ("replay_s", "workload replay (s)"), ("mixed_lookups_per_s", "mixed lookups/s"),
              ("mixed_uncached_lookups_per_s", "mixed, no result cache /s"),
              ("peak_rss_mb", "peak RSS (MiB)")]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, default=trees.DEFAULT_ROOT, metavar="DIR")
    p.add_argument("--json", metavar="FILE", help="write the measurements here")
    p.add_argument("--scale", type=int, default=10, metavar="N")
    p.add_argument("--quick", action="store_true", help="a tiny run (smoke test)")
    p.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                   help="where the scaled database is kept between runs")
    p.add_argument("--rebuild", action="store_true", help="rebuild the scaled database")
    p.add_argument("--baseline", metavar="REV",
                   help="also measure this git revision of the repository (e.g. main), with "
                        "the same probe, and check that its answers agree leaf by leaf")
    p.add_argument("--pg-url", metavar="URL",
                   help="a PostgreSQL database the bench may EMPTY and fill, to time the "
                        "stream on PostgreSQL too")
    p.add_argument("--no-cache", action="store_true",
                   help="build the scaled database in a temporary directory, keep nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.scale < 1:
        print("python -m bench: --scale must be a positive integer", file=sys.stderr)
        return 2
    cache_dir = trees.default_cache_dir() if args.cache_dir is None else args.cache_dir
    options = trees.BenchOptions(args.root, args.scale, args.quick,
                                    None if args.no_cache else cache_dir, args.rebuild,
                                    args.baseline, args.pg_url)
    try:
        result = benchmod.run_bench(options, lambda m: print(m, file=sys.stderr))
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"python -m bench: {exc}", file=sys.stderr)
        return 1
    print_report(result)
    if args.json:
        Path(args.json).write_text(to_json(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def print_report(result: dict[str, Any]) -> None:
    rows = [_bench_row(key, title, result) for key, title in BENCH_ROWS]
    scaled = f"x{result['scale']}" + (" (cached build)" if result["scaled"].get("cached") else "")
    print_table(rows, [Column("what", "MEASUREMENT"), Column("base", "V0.18", True),
                       Column("scaled", scaled.upper(), True), Column("ratio", "RATIO", True)])
    print(f"targets: {json.dumps(result['base']['methods'])}; stream of {result['stream']} "
          f"leaves")
    print()
    print_table(benchmod.issue_table(result),
                [Column("what", "ISSUE #11 MEASURE"),
                 Column("before", f"BEFORE ({result.get('baseline', {}).get('revision', '-')})"),
                 Column("after", "AFTER"), Column("target", "TARGET")])
    print(f"{VERSION}'s per-lookup figures and the corpus ingest: the median of "
          f"{result['rounds']} measurements, the revisions alternating (all in the JSON)")
    print(f"re-ingest of a changed {VERSION}: {result['base']['reingest_ratio']:.2f}x "
          "its fresh ingest")
    agreement = result.get("agreement")
    if agreement:
        print(f"answers: {agreement['leaves'] - agreement['differing']}/{agreement['leaves']} "
              f"stream leaves agree; replays agree: {agreement['replays_agree']}")


def _bench_row(key: str, title: str, result: dict[str, Any]) -> dict[str, Any]:
    base, scaled = result["base"].get(key), result["scaled"].get(key)
    ratio = scaled / base if base and scaled is not None else None
    return {"what": title, "base": _round(base), "scaled": _round(scaled),
            "ratio": None if ratio is None else f"{ratio:.2f}"}


def _round(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value


if __name__ == "__main__":
    sys.exit(main())
