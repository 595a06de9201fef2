"""Conformance of every registered capability path (in the spirit of SQLAlchemy's dialect
compliance suite): one example per path (tests/conformance/examples.py), the same checks
for all of them.

1. Both sides agree: the row side (ingest parser, ingest's RowContext) and the target
   side (the descriptor through its mapping selector) give the same regime key, axes and
   semantic for the example's leaf and row.
2. Each mutation changes exactly its regime fields (the coordinate stays), and end to end
   the mutated leaf does not answer from the example's row: it misses with the stated
   reason, or lands on the foreign row of its own regime — except where the base
   input-signature lookup answers first (``BaseAnswers``, asserted as such).
3. End to end the leaf answers MEASURED with the latency written in the CSV, from that
   line; the path itself answers its exact coordinate.
4. ``profstore regimes --json`` lists the regime with its point count and ``profstore
   explain --json`` names the path.

All stores are built through ingest on the selected backend (``--backend``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from profstore.api import Store
from profstore.cli.main import main
from profstore.lookup.attempt import Attempt
from profstore.lookup.path_runner import PathRequest
from profstore.model.leaf import LeafOp
from profstore.model.result import QueryResult, QuerySource, Reason
from profstore.paths.base import TargetContext
from profstore.paths.registry import ALL_PATHS, ingest_paths

from tests.conformance.examples import EXAMPLES
from tests.conformance.model import (
    BaseAnswers,
    Lands,
    Miss,
    Mutation,
    PathExample,
    changed_fields,
    mutated,
)
from tests.conformance.sides import (
    mapping_document,
    matching,
    path_of,
    routed_path,
    row_side,
    signature,
    target_extraction,
    version_mapping,
)
from tests.support.perfdb import build_database, write_version
from tests.support.stores import opened_store

VERSION = "v0.18"
PATHS = sorted(EXAMPLES)
MUTATIONS = [pytest.param(EXAMPLES[p], m, id=f"{p}-{m.name}")
             for p in PATHS for m in EXAMPLES[p].mutations]
no_database = pytest.mark.no_database


@pytest.fixture(params=PATHS)
def example(request: pytest.FixtureRequest) -> PathExample:
    return EXAMPLES[request.param]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every example's kernel CSV and mapping entries in one version, ingested."""
    root = tmp_path_factory.mktemp("conformance")
    write_version(root / "data", {e.kernel: e.csv_rows for e in EXAMPLES.values()},
                  mapping_document())
    return build_database(root)


store = opened_store("db", scope="module")


def lookup(store: Store, descriptor: dict[str, Any]) -> QueryResult:
    return store.lookup(LeafOp.from_json(descriptor), VERSION)


def lines(result: QueryResult) -> list[int]:
    return [r["line"] for r in result.details["matched_rows"]]


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    return json.loads(out)


# ---- the registry ---------------------------------------------------------------------


@no_database
def test_every_registered_path_has_an_example():
    assert sorted(p.name for p in ALL_PATHS) == PATHS


@no_database
def test_the_example_op_routes_to_its_path(example):
    leaf = LeafOp.from_json(dict(example.leaf))
    assert routed_path(leaf) is path_of(example)
    assert path_of(example) in ingest_paths(example.kernel, version_mapping())


# ---- (1) both sides agree -------------------------------------------------------------


@no_database
def test_row_and_target_give_the_same_regime_and_axes(example):
    target = target_extraction(example, example.leaf)
    row = matching(row_side(example, example.hit_line), target)
    assert signature(row) == signature(target)
    assert dict(row.regime) == dict(target.regime)


@no_database
def test_the_other_rows_of_the_regime_share_it(example):
    """Every row of ``rows`` is in the leaf's regime; every foreign row is not."""
    key = target_extraction(example, example.leaf).regime_key
    for i in range(len(example.rows)):
        assert key in [e.regime_key for e in row_side(example, example.row_line(i))]
    for i in range(len(example.foreign)):
        assert key not in [e.regime_key for e in row_side(example, example.foreign_line(i))]


# ---- (2) a changed regime field breaks the match ----------------------------------------


@no_database
@pytest.mark.parametrize(("example", "mutation"), MUTATIONS)
def test_a_mutation_changes_exactly_its_regime_fields(example, mutation: Mutation):
    original = target_extraction(example, example.leaf)
    changed = target_extraction(example, mutated(example.leaf, mutation.edits))
    assert changed_fields(original.regime, changed.regime) == set(mutation.fields)
    assert changed.regime_key != original.regime_key
    assert changed.axes == original.axes
    if isinstance(mutation.outcome, Lands):
        foreign = row_side(example, example.foreign_line(mutation.outcome.index))
        assert signature(matching(foreign, changed)) == signature(changed)


@pytest.mark.parametrize(("example", "mutation"), MUTATIONS)
def test_a_mutated_leaf_does_not_answer_from_the_row(store, example, mutation: Mutation):
    descriptor = mutated(example.leaf, mutation.edits)
    result = lookup(store, descriptor)
    outcome = mutation.outcome
    if isinstance(outcome, Miss):
        assert (result.source, result.latency_us, result.reason) == (
            None, None, outcome.reason)
        assert result.details["target_regime"] == dict(
            target_extraction(example, descriptor).regime)
    elif isinstance(outcome, Lands):
        assert (result.source, result.latency_us) == (
            QuerySource.MEASURED, example.foreign_latency(outcome.index))
        assert lines(result) == [example.foreign_line(outcome.index)]
    else:
        assert isinstance(outcome, BaseAnswers)
        assert not path_of(example).exact_owner_for(LeafOp.from_json(descriptor))
        assert (result.source, result.latency_us, result.details["method"]) == (
            QuerySource.MEASURED, example.hit_latency, "base_exact")
        assert lines(result) == [example.hit_line]
        attempt = run_path(store, example, descriptor)
        assert (attempt.result, attempt.reason) == (None, Reason.REGIME_MISMATCH)


# ---- (3) the leaf answers MEASURED from its row ---------------------------------------


def test_the_leaf_answers_measured_from_its_row(store, example):
    result = lookup(store, dict(example.leaf))
    assert (result.source, result.latency_us) == (QuerySource.MEASURED, example.hit_latency)
    assert lines(result) == [example.hit_line]
    if path_of(example).exact_owner_for(LeafOp.from_json(dict(example.leaf))):
        d = result.details
        assert (d["path"], d["method"], d["exact_owner"]) == (
            example.path, "exact_coordinate", "path")
    else:  # RFC §3.1: the base input-signature lookup comes first and answers
        assert (result.details["method"], result.details["exact_owner"]) == (
            "base_exact", "base")


def run_path(store: Store, example: PathExample, descriptor: dict[str, Any]) -> Attempt:
    """The example's path alone, on the store's own engine (no base lookup before it)."""
    profile = store.profile(VERSION)
    assert profile is not None
    mapping = profile.mapping
    leaf = LeafOp.from_json(descriptor)
    entry = mapping.entry(leaf.op)
    assert entry is not None
    ctx = TargetContext(entry, example.kernel, mapping.policy(example.kernel))
    return store.dispatcher.runner.run(PathRequest(path_of(example), leaf, ctx, profile.id))


def test_the_path_answers_its_exact_coordinate(store, example):
    attempt = run_path(store, example, dict(example.leaf))
    result = attempt.result
    assert result is not None, f"{attempt.reason}: {attempt.message}"
    assert (result.source, result.latency_us) == (QuerySource.MEASURED, example.hit_latency)
    d = result.details
    assert (d["path"], d["method"], d["kernel_type"]) == (
        example.path, "exact_coordinate", example.kernel)
    assert lines(result) == [example.hit_line]
    target = target_extraction(example, example.leaf)
    assert d["target_regime"] == dict(target.regime)
    assert d["axes"] == dict(zip(path_of(example).axis_names, target.axes))


# ---- (4) regimes and explain ------------------------------------------------------------


def test_regimes_lists_the_path_with_its_points(capsys, db, example):
    shown = cli_json(capsys, "regimes", "--db", db, "--version", VERSION,
                     "--kernel", example.kernel, "--json")
    key = target_extraction(example, example.leaf).regime_key
    [regime] = [r for r in shown if r["path"] == example.path and r["regime"] == key]
    assert regime["kernel"] == example.kernel
    assert regime["points"] == len(example.rows)


def test_explain_names_the_path(capsys, db, example):
    leaf = LeafOp.from_json(dict(example.leaf))
    if path_of(example).exact_owner_for(leaf):
        descriptor, latency = dict(example.leaf), example.hit_latency
        source, method = QuerySource.MEASURED, "exact_coordinate"
    else:
        assert example.probe is not None, (
            f"{example.path}: the base answers the example leaf, so the example needs a "
            "probe between two rows for explain to show the path")
        descriptor, latency = dict(example.probe.leaf), example.probe.latency_us
        source, method = QuerySource.INTERPOLATED, example.probe.method
    shown = cli_json(capsys, "explain", "--db", db, "--version", VERSION, "--json",
                     json.dumps(descriptor))
    assert (shown["source"], shown["latency_us"]) == (source.value, pytest.approx(latency))
    d = shown["details"]
    assert (d["path"], d["method"], d["kernel_type"], d["op"]) == (
        example.path, method, example.kernel, descriptor["op"])
