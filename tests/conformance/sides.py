"""The two sides of a path for one example, computed the way ingest and lookup compute them:
the row side from the CSV text through the ingest parser with a ``RowContext`` built as
ingest builds it (``RowWriter.write_kernel_file``), the target side from the descriptor
through the mapping entry's selector (``Dispatcher._dispatch``)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import yaml
from profstore.ingest.csvfile import Accepted, read_kernel_csv
from profstore.model.leaf import LeafOp
from profstore.model.mapping import VersionMapping, load_mapping
from profstore.paths.base import Extraction, OperatorPath, Refusal, RowContext, TargetContext
from profstore.paths.registry import path_for, path_named, selector_of, tc_input_counts

from tests.conformance.examples import EXAMPLES
from tests.conformance.model import PathExample
from tests.support.perfdb import csv_text, mapping_doc

POLICY_BLOCKS = ("interpolation_policy", "latency_policy", "query_selection_policy")


def mapping_document() -> dict[str, Any]:
    """One op_mapping for every example: all entries, each kernel's policy overrides."""
    entries = {op: dict(e) for ex in EXAMPLES.values() for op, e in ex.entries.items()}
    policies: dict[str, Any] = {}
    for ex in EXAMPLES.values():
        for block, overrides in ex.policies.items():
            assert block in POLICY_BLOCKS, f"{ex.path}: unknown policy block {block}"
            policies.setdefault(block, {"kernel_overrides": {}})["kernel_overrides"][
                ex.kernel] = dict(overrides)
    return mapping_doc(entries, **policies)


@cache
def version_mapping() -> VersionMapping:
    """The mapping as ingest reads op_mapping.yaml."""
    mapping = load_mapping(yaml.safe_dump(mapping_document()), is_text=True)
    assert mapping.problems == (), mapping.problems
    return mapping


def row_context(kernel: str) -> RowContext:
    mapping = version_mapping()
    return RowContext(kernel, mapping.policy(kernel), tc_input_counts(kernel, mapping),
                      tuple(mapping.entries_for_kernel(kernel)))


def accepted_rows(example: PathExample) -> list[Accepted]:
    """Every CSV row of the example as ingest accepts it (none may be rejected)."""
    kernel = example.kernel
    readout = read_kernel_csv(csv_text(example.csv_rows).encode(), kernel,
                              version_mapping().policy(kernel))
    assert readout.rejected == [], [r.reason for r in readout.rejected]
    assert len(readout.accepted) == len(example.csv_rows)
    return readout.accepted


def row_side(example: PathExample, line: int) -> list[Extraction]:
    """The path's extractions of the CSV row on ``line``; a refusal fails the test."""
    [accepted] = [a for a in accepted_rows(example) if a.row.line_no == line]
    found = path_of(example).row_regime(accepted.row, row_context(example.kernel))
    assert not isinstance(found, Refusal), f"row {line} refused: {found}"
    return list(found)


def routed_path(leaf: LeafOp) -> OperatorPath:
    """The path the dispatcher picks for the leaf's mapping entry."""
    entry = version_mapping().entry(leaf.op)
    assert entry is not None, f"{leaf.op} is not mapped"
    found = path_for(selector_of(entry), entry.kernels[0])
    assert found is not None, f"selector {selector_of(entry)} reaches no path"
    return found


def target_side(example: PathExample, descriptor: Mapping[str, Any]) -> Extraction | Refusal:
    leaf = LeafOp.from_json(dict(descriptor))
    mapping = version_mapping()
    entry = mapping.entry(leaf.op)
    assert entry is not None and entry.kernels[0] == example.kernel
    ctx = TargetContext(entry, example.kernel, mapping.policy(example.kernel))
    return routed_path(leaf).target_regime(leaf, ctx)


def target_extraction(example: PathExample, descriptor: Mapping[str, Any]) -> Extraction:
    found = target_side(example, descriptor)
    assert not isinstance(found, Refusal), f"target refused: {found}"
    return found


def path_of(example: PathExample) -> OperatorPath:
    return path_named(example.path)


def signature(extraction: Extraction) -> tuple[str, tuple[float, ...], str | None]:
    return extraction.regime_key, tuple(extraction.axes), extraction.semantic


def matching(extractions: list[Extraction], target: Extraction) -> Extraction:
    """The one row extraction in the target's regime."""
    found = [e for e in extractions if e.regime_key == target.regime_key]
    assert len(found) == 1, (
        f"{len(found)} row extractions in the target regime {target.regime_key}; "
        f"row regimes: {[e.regime_key for e in extractions]}")
    return found[0]
