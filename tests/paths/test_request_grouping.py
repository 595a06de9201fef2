"""``row_api_paths``: the API paths stated by the mapping entries that route to the calling
path, decided without the registry (which imports every path), and the same as the
registry's ``selector_of`` would decide on every shipped mapping and every flag."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from profstore.model.mapping import KernelPolicy, MappingEntry, load_mapping
from profstore.model.profile_row import CsvRow
from profstore.model.result import Reason
from profstore.paths.base import Refusal, RowContext
from profstore.paths.registry import ALL_PATHS, QUERY_MODES, SUBCATEGORIES, selector_of
from profstore.paths.request_grouping import row_api_paths

from tests.paths.test_registry import SHIPPED
from tests.support.prerequisites import require

pytestmark = pytest.mark.no_database

LI = frozenset({"attention_lightning_indexer"})
QUERY_MODE_PATHS = [p for p in ALL_PATHS if p.selector_field == "query_mode"
                    and p.selectors - {"generic"}]


def entry(api_path: str | None = None, **fields: object) -> MappingEntry:
    raw = {} if api_path is None else {"api_path": api_path}
    return MappingEntry(op="x", kernel_type="LightningIndexer", raw=raw, **fields)


def row(**extras: str) -> CsvRow:
    return CsvRow("LightningIndexer", (), (), 1.0, "Duration(us)", extras=extras)


def context(*entries: MappingEntry) -> RowContext:
    return RowContext("LightningIndexer", KernelPolicy(), entries=entries)


def test_no_api_path_stated_by_an_entry_of_the_path_gives_no_field():
    other = entry("torch_npu.other", query_mode="attention_sparse_sharedkv")
    assert row_api_paths(row(), context(entry(query_mode="attention_lightning_indexer"), other),
                         LI) == [None]


def test_a_row_without_its_own_api_path_serves_every_stated_one_sorted():
    entries = (entry("torch_npu.b", query_mode="attention_lightning_indexer"),
               entry("torch_npu.a", query_mode="attention_lightning_indexer"),
               entry("torch_npu.c", query_mode="attention_lightning_indexer", zero_cost=True))
    assert row_api_paths(row(), context(*entries), LI) == ["torch_npu.a", "torch_npu.b"]


def test_the_row_api_path_picks_a_stated_one_or_refuses():
    entries = (entry("torch_npu.a", query_mode="attention_lightning_indexer"),
               entry("torch_npu.b", query_mode="attention_lightning_indexer"))
    assert row_api_paths(row(**{"API Path": " torch_npu.b "}), context(*entries), LI) == [
        "torch_npu.b"]
    refused = row_api_paths(row(**{"Runtime api_path": "torch_npu.z"}), context(*entries), LI)
    assert refused == Refusal(Reason.REGIME_MISMATCH,
                              "CSV API path 'torch_npu.z' differs from the mapping's "
                              "torch_npu.a, torch_npu.b", {"api_path": "torch_npu.z"})


def _routes_here(e: MappingEntry, modes: frozenset[str]) -> bool:
    return row_api_paths(row(), context(e), modes) == ["torch_npu.api"]


def test_routing_agrees_with_the_registry_on_every_shipped_entry():
    require(len(SHIPPED) == 3, "the three shipped op_mapping.yaml files")
    checked = 0
    for yaml_file in SHIPPED:
        for found in load_mapping(yaml_file).entries.values():
            for path in QUERY_MODE_PATHS:
                e = dataclasses.replace(found, raw={"api_path": "torch_npu.api"})
                assert _routes_here(e, path.selectors) == (selector_of(found) in path.selectors)
                checked += 1
    assert checked > 0


FLAGS = ({}, {"category": "communication"}, {"zero_cost": True},
         {"accepted_miss": "accepted miss"}, {"composite": True})


@pytest.mark.parametrize("path", QUERY_MODE_PATHS, ids=lambda p: p.name)
def test_routing_agrees_with_the_registry_over_the_whole_vocabulary(path):
    """Every query mode and subcategory a path serves, an unserved one and none, under
    each rule that precedes them (RFC §3.1)."""
    modes = [*sorted(QUERY_MODES), "mtp_projection", None]
    subcategories = [*sorted(SUBCATEGORIES), "unserved_subcategory", None]
    for mode, sub, flags in itertools.product(modes, subcategories, FLAGS):
        e = entry("torch_npu.api", query_mode=mode, compute_subcategory=sub, **flags)
        expected = (not flags and mode in path.selectors)
        assert _routes_here(e, path.selectors) is expected, (mode, sub, flags)
        assert (selector_of(e) in path.selectors) is expected, (mode, sub, flags)
