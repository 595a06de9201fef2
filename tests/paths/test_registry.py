"""Selectors come from the path registry: every selector a shipped op_mapping.yaml yields
is answered by the dispatcher or reaches a registered path, and every selector a path
declares is reachable from a mapping entry that names it. The registry lists every path
module under store/paths/ by a plain import (a path module importing it back is a cycle
the acyclic_siblings contract of tests/meta/test_layering.py reports)."""

from __future__ import annotations

import importlib
import pkgutil

import profstore.paths as paths_package
import pytest
from profstore.model.mapping import MappingEntry, load_mapping
from profstore.paths.base import OperatorPath
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



def _path_classes_defined_in_the_package() -> set[type[OperatorPath]]:
    """Every concrete ``OperatorPath`` subclass (one that sets ``name``) of any module
    under store/paths/, found by importing each module (what the registry no longer does)."""
    for module in pkgutil.iter_modules(paths_package.__path__):
        importlib.import_module(f"{paths_package.__name__}.{module.name}")
    found, stack = set(), list(OperatorPath.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "name" in cls.__dict__ and cls.__module__.startswith(f"{paths_package.__name__}."):
            found.add(cls)
    return found


def test_the_registry_lists_every_path_defined_under_store_paths():
    assert {type(p) for p in ALL_PATHS} == _path_classes_defined_in_the_package()


def test_the_registered_paths_in_name_order():
    assert [p.name for p in ALL_PATHS] == [
        "attention_lightning_indexer", "attention_sparse_sharedkv", "attention_special",
        "compute_scale", "elementwise", "generic", "matmul", "moe_fused", "quantized_matmul",
        "scatter_nd_update_mla"]


def test_no_selector_is_declared_by_two_paths_or_shadows_the_dispatcher():
    declared = [s for p in ALL_PATHS for s in p.selectors]
    assert len(declared) == len(set(declared))
    assert set(declared) & DISPATCH_SELECTORS == {"generic"}

