"""The bytecodes the dense reference search's lookups run, this tree against a baseline:
a repeatable figure for a change to the lookups' Python code (``bench.opcode_probe``).

    python -m bench.lookup_opcodes [--db perf.db] [--baseline-python PY] [--out FILE_STEM]

It runs the bench's dense reference search (``bench.bench_tensorcast.SCENARIOS``, Qwen3-32B,
TP 4/8, batch 1-64, 2 workers) once per tree under ``bench/opcode_probe.py`` and writes
``bench/results/lookup-opcodes-<commit>.md`` (and ``.json``): each tree's lookups, their
bytecodes in all and per lookup, and the functions that run the most of them in this tree.
The wall clock of this machine varies by a quarter between identical runs; the bytecode
count does not (it moves only with the code, or with the stream of lookups).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.bench_tensorcast import (
    REPO,
    SCENARIOS,
    TENSOR_CAST,
    _commit,
    _environment,
    _ingest,
    _model_dir,
)

PROBE = REPO / "bench" / "opcode_probe.py"


def count(python: str, db: str, model: Path, out_dir: Path) -> dict[str, Any]:
    """The dense search run by ``python`` under the probe: its processes' counts summed."""
    dense = SCENARIOS[0]
    out_dir.mkdir(parents=True)
    subprocess.run([python, str(PROBE), str(out_dir), "tensorcast", dense.command, "--db", db,
                    "--version", "v0.18", "--", str(model), *dense.args],
                   check=True, capture_output=True, cwd=TENSOR_CAST, env=_environment())
    return summed([json.loads(p.read_text()) for p in sorted(out_dir.glob("opcodes-*.json"))])


def summed(processes: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-process counts as one: lookups, bytecodes, each function's bytecodes."""
    functions: Counter[tuple[str, int, str]] = Counter()
    for process in processes:
        for f in process["functions"]:
            functions[(f["file"], f["line"], f["name"])] += f["opcodes"]
    return {"processes": len(processes),
            "lookups": sum(p["lookups"] for p in processes),
            "opcodes": sum(p["opcodes"] for p in processes),
            "functions": [{"file": f, "line": line, "name": name, "opcodes": n}
                          for (f, line, name), n in functions.most_common()]}


def render(trees: dict[str, dict[str, Any]], commit: str, top: int = 20) -> str:
    lines = [f"# The dense reference search's lookups in bytecodes, at {commit}", "",
             "`python -m bench.lookup_opcodes`: bytecodes run inside `ProfstoreDataSource."
             "lookup` in every process of one dense reference search (exact and repeatable; "
             "C work such as SQLite and numpy is not counted).", "",
             "| tree | processes | lookups | bytecodes | per lookup |",
             "| --- | --- | --- | --- | --- |"]
    for name, tree in trees.items():
        per = tree["opcodes"] / tree["lookups"] if tree["lookups"] else 0.0
        lines.append(f"| {name} | {tree['processes']} | {tree['lookups']} | "
                     f"{tree['opcodes']:,} | {per:,.0f} |")
    if "baseline" in trees and trees["baseline"]["opcodes"]:
        change = trees["this"]["opcodes"] / trees["baseline"]["opcodes"] - 1
        lines += ["", f"This tree against the baseline: {100 * change:+.1f} % bytecodes."]
    mine = trees["this"]
    lines += ["", f"## Where this tree's bytecodes run (the {top} functions with most, "
                  "their own)", "", "| share | bytecodes | function |", "| --- | --- | --- |"]
    for f in mine["functions"][:top]:
        share = 100 * f["opcodes"] / mine["opcodes"]
        lines.append(f"| {share:.2f} % | {f['opcodes']:,} | `{f['file']}:{f['line']}` "
                     f"{f['name']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an ingested database (default: ingest the corpus)")
    parser.add_argument("--baseline-python", metavar="PY",
                        help="an interpreter whose profstore is the baseline")
    parser.add_argument("--out", type=Path, help="file stem of the result (default: "
                        "bench/results/lookup-opcodes-<commit>)")
    options = parser.parse_args(argv)
    commit = _commit()
    with tempfile.TemporaryDirectory(prefix="profstore-opcodes-") as temp:
        work = Path(temp)
        db = options.db or _ingest(work)
        model = _model_dir(SCENARIOS[0].model, work / "models")
        trees = {"this": count(sys.executable, db, model, work / "this")}
        if options.baseline_python:
            trees["baseline"] = count(options.baseline_python, db, model, work / "baseline")
    out = options.out or REPO / "bench" / "results" / f"lookup-opcodes-{commit}"
    out.with_suffix(".json").write_text(json.dumps({"commit": commit, **trees}, indent=1))
    out.with_suffix(".md").write_text(render(trees, commit))
    print(render(trees, commit))
    print(f"written to {out}.json and .md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
