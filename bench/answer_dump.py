"""Every answer of the corpus, one JSON line per (version, leaf): what a refactoring must keep.

The leaves are the benchmark's realistic stream (every distinct leaf of the four workloads
under its fill dtypes and contexts), its named targets and a token sweep, each asked of
every ingested version on a fresh Store (``bench/probe.py``'s ``answers`` task). A line
holds the latency (``repr``), source, reason and the whole details mapping, so two dumps are
equal byte for byte exactly when no answer, detail or miss reason changed. With
``--baseline REV`` the corpus is ingested and dumped by that revision's code too (each
tree ingests its own database), and the two dumps are compared.

    python -m bench.answer_dump --baseline main --out answers.jsonl
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.trees import DEFAULT_ROOT, WORKLOADS, Tree, code_fingerprint, export_tree, probe


def dump(tree: Tree, root: Path, workdir: Path, out: Path) -> int:
    db = workdir / f"answers-{tree.fingerprint}.db"
    probe(tree, {"task": "ingest", "root": str(root), "db": str(db)})
    found = probe(tree, {"task": "answers", "db": str(db), "workloads": str(WORKLOADS),
                         "out": str(out)})
    return int(found["answers"])


def first_difference(before: Path, after: Path) -> str | None:
    """The first line that differs (1-based), or None when the files are equal."""
    old, new = before.read_bytes().splitlines(), after.read_bytes().splitlines()
    for n, (a, b) in enumerate(zip(old, new), start=1):
        if a != b:
            return f"line {n}:\n  before {a.decode()[:400]}\n  after  {b.decode()[:400]}"
    if len(old) != len(new):
        return f"{len(old)} lines before, {len(new)} after"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answer_dump",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, help="this checkout's dump")
    parser.add_argument("--baseline", metavar="REV", help="dump REV's answers too; compare")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="profstore-answers-") as tmp:
        work = Path(tmp)
        count = dump(Tree("current", None, code_fingerprint()), args.root, work, args.out)
        print(f"{count} answers written to {args.out}")
        if not args.baseline:
            return 0
        before = args.out.with_name(f"{args.out.stem}-{args.baseline}{args.out.suffix}")
        dump(export_tree(args.baseline, work / "baseline"), args.root, work, before)
        difference = first_difference(before, args.out)
    if difference is None:
        print(f"identical, byte for byte, to {args.baseline}'s ({before})")
        return 0
    print(f"differs from {args.baseline}'s ({before}) at {difference}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
