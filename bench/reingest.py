"""The re-ingest figure of ``python -m bench``: replacing a changed v0.18 against
ingesting it fresh (issue #16: deleting a version's samples once cost 4-8 times a fresh
ingest; the target is at most 1.5 times)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from profstore.ingest.discover import VLLM

from bench.probe import VERSION
from bench.trees import QUICK_KERNELS, BenchOptions, Tree, probe, stage


def reingest_figures(options: BenchOptions, tree: Tree, workdir: Path, db: Path,
                     fresh_s: float, log: Callable[[str], None]) -> dict[str, Any]:
    """Re-ingest ``db``'s v0.18 (one copy, as ``build`` staged it) with one CSV changed,
    by the tree's own code: the version is deleted and loaded again in one transaction."""
    kernels = QUICK_KERNELS if options.quick else None
    staged = stage(options.root, workdir / f"changed-{tree.fingerprint}", 1, kernels)
    changed = sorted(staged.glob(f"*/{VLLM}/*/*.csv"))[0]
    changed.write_bytes(changed.read_bytes() + b"\r\n")  # new bytes, the same rows
    log(f"{tree.label}: re-ingesting the changed {VERSION} …")
    figures = probe(tree, {"task": "ingest", "root": str(staged), "db": str(db)})
    return {"reingest_s": figures["ingest_s"], "reingest_ratio": figures["ingest_s"] / fresh_s}
