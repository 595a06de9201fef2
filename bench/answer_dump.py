"""Every answer of a store, one JSON line per (version, leaf): what a refactoring must keep.

The leaves are the benchmark's realistic stream (every distinct leaf of the four workloads
under its fill dtypes and contexts), its named targets and a token sweep, each asked of
every ingested version on a fresh Store. A line holds the latency (``repr``), source,
reason and the whole details mapping, so two dumps are equal byte for byte exactly when
no answer, detail or miss reason changed.

    python -m bench.answer_dump --db perf.db --out answers.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from profstore import LeafOp, Store

from bench.probe import TARGETS, rms_norm, stream_leaves

WORKLOADS = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def answer_line(version: str, leaf: Any, result: Any) -> str:
    latency = result.latency_us
    return json.dumps({
        "version": version, "leaf": leaf.to_json(),
        "latency_us": None if latency is None else repr(float(latency)),
        "source": None if result.source is None else result.source.value,
        "reason": None if result.reason is None else result.reason.value,
        "details": result.details,
    }, sort_keys=True, default=repr)


def dump(db: str, workloads: Path, out: Path) -> int:
    leaves = list(stream_leaves(str(workloads)))
    leaves += [LeafOp.from_json(d) for d, _ in TARGETS.values()]
    leaves += [LeafOp.from_json(rms_norm(n)) for n in range(1, 300, 7)]
    lines = 0
    with Store.open(db) as store, out.open("w") as sink:
        for version in store.versions():
            for leaf in leaves:
                sink.write(answer_line(version, leaf, store.lookup(leaf, version)) + "\n")
                lines += 1
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workloads", type=Path, default=WORKLOADS)
    args = parser.parse_args()
    print(f"{dump(args.db, args.workloads, args.out)} answers written to {args.out}")


if __name__ == "__main__":
    main()
