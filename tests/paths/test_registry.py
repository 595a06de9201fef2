"""Selectors come from the path registry: every selector a shipped op_mapping.yaml yields
is answered by the dispatcher or reaches a registered path, and every selector a path
declares is reachable from a mapping entry that names it."""

from __future__ import annotations

import pytest
from profstore.model.mapping import MappingEntry, load_mapping
from profstore.paths.registry import ALL_PATHS, DISPATCH_SELECTORS, path_for, selector_of

from tests.support.paths import PERFDB
from tests.support.prerequisites import require

pytestmark = pytest.mark.no_database

SHIPPED = sorted(PERFDB.glob("*/vllm_ascend/*/op_mapping.yaml"))


def test_every_selector_of_every_shipped_mapping_reaches_a_path_or_the_dispatcher():
    require(len(SHIPPED) == 3, f"the three op_mapping.yaml files of {PERFDB}")
    unreachable = []
    for yaml_file in SHIPPED:
        mapping = load_mapping(yaml_file)
        for op, entry in mapping.entries.items():
            selector = selector_of(entry)
            if selector in DISPATCH_SELECTORS and selector != "generic":
                continue
            kernel = entry.kernels[0] if entry.kernels else ""
            if path_for(selector, kernel) is None:
                unreachable.append((yaml_file.parent.name, op, selector))
    assert unreachable == []


@pytest.mark.parametrize("path", [p for p in ALL_PATHS if p.selectors - {"generic"}],
                         ids=lambda p: p.name)
def test_each_declared_selector_routes_an_entry_that_names_it_to_its_path(path):
    for selector in path.selectors:
        entry = MappingEntry(op="x", kernel_type="K", **{path.selector_field: selector})
        assert selector_of(entry) == selector
        assert path_for(selector, "K") is path

