"""Fuzzed leaf descriptors: a descriptor parses or raises ValueError; a parsed one is a
usable cache key, round-trips through JSON, and a lookup of it answers or misses with a
reason (it never raises)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.robustness import FUZZ, JSON_VALUES, mutated, mutated_tree
from tests.support.fuzz import DISPATCH, MM, RMS, SEEDS
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.stores import opened_store

PLAUSIBLE = (
    JSON_VALUES
    | st.integers(-2, 2**40) | st.integers(-(2**70), 2**70)
    | st.lists(st.integers(-1, 10**6), max_size=4)
    | st.sampled_from(("bfloat16", "float16", "int8", "float32", "fp8", "DT_BF16", "FRACTAL_NZ",
                       "decode", "prefill", "NaN"))
    | st.fixed_dictionaries({"shape": st.lists(st.integers(-1, 10**5), max_size=4),
                             "dtype": st.sampled_from(("bfloat16", "int8", "int4", "bool"))})
)
"""Values a real descriptor could carry (shapes, dtypes, phases) besides arbitrary ones, so
that many mutants still parse and reach the lookup."""


def rms_row(tokens: int, latency: float) -> Row:
    return Row([[tokens, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[tokens, 7168]], ["DT_BF16"],
               latency)


def mm_row(m: int, latency: float) -> Row:
    return Row([[m, 7168], [7168, 4096]], ["DT_BF16"] * 2, [[m, 4096]], ["DT_BF16"], latency)


@pytest.fixture(scope="module")
def store_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("fuzz-leaf")
    entries = {MM["op"]: {"kernel_type": "MatMulV2"}, RMS["op"]: {"kernel_type": "RmsNorm"},
               DISPATCH["op"]: {"kernel_type": "DispatchFFNCombine", "query_mode": "moe_fused"}}
    write_version(tmp / "data", {"RmsNorm": [rms_row(8, 10.0), rms_row(16, 14.0)],
                                 "MatMulV2": [mm_row(128, 20.0), mm_row(256, 36.0)]},
                  mapping_doc(entries))
    return build_database(Path(tmp))


store = opened_store("store_db", scope="module")


def parse(data: object) -> LeafOp | None:
    try:
        leaf = LeafOp.from_json(data)
    except ValueError as exc:
        assert str(exc).strip()
        return None
    assert isinstance(leaf, LeafOp)
    return leaf


def assert_usable(leaf: LeafOp) -> None:
    hash(leaf)
    text = json.dumps(leaf.to_json(), sort_keys=True)
    assert json.dumps(LeafOp.from_json(json.loads(text)).to_json(), sort_keys=True) == text


def assert_answer_or_reason(store: Store, leaf: LeafOp) -> None:
    result = store.lookup(leaf, "v0.18")
    if result.hit:
        assert math.isfinite(result.latency_us) and result.latency_us >= 0
        assert isinstance(result.source, QuerySource)
    else:
        assert isinstance(result.reason, Reason)


def test_the_seeds_answer_as_the_fixture_says(store):
    assert store.lookup(LeafOp.from_json(RMS), "v0.18").latency_us == pytest.approx(12.0)
    assert store.lookup(LeafOp.from_json(MM), "v0.18").latency_us == pytest.approx(20.0 + 9.0)
    assert store.lookup(LeafOp.from_json(DISPATCH), "v0.18").reason is Reason.CSV_NOT_FOUND


@FUZZ
@given(data=mutated_tree(SEEDS, max_steps=3, values=PLAUSIBLE))
def test_a_mutated_descriptor_parses_or_raises_value_error(store, data):
    leaf = parse(data)
    if leaf is not None:
        assert_usable(leaf)
        assert_answer_or_reason(store, leaf)


@FUZZ
@given(text=mutated([json.dumps(s) for s in SEEDS], max_steps=3))
def test_mutated_descriptor_text_parses_or_raises_value_error(store, text):
    leaf = parse(text)
    if leaf is not None:
        assert_usable(leaf)
        assert_answer_or_reason(store, leaf)


@FUZZ
@given(data=st.sampled_from(SEEDS), dims=st.lists(st.integers(-(2**80), 2**80), min_size=2,
                                                  max_size=2))
def test_arbitrary_dimensions_parse_or_raise_and_never_break_a_lookup(store, data, dims):
    changed = {**data, "args": [{"shape": dims, "dtype": "bfloat16"}, *data["args"][1:]]}
    leaf = parse(changed)
    if leaf is not None:
        assert min(dims) >= 0
        assert_answer_or_reason(store, leaf)
