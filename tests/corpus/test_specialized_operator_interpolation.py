"""RFC §7.3 across the Phase 2 paths, on the three real op_mapping.yaml files.

The per-path §7.2 matrix lives in ``tests/paths/`` (one file per path module);
this file checks what holds for every path at once: selectors reach their target
builders (§7.3.1), kernels have data or are documented stable misses, and no
specialised leaf can produce a generic-compute answer (§7.3.4).
"""

from __future__ import annotations

import pytest
from profstore.model.mapping import load_mapping
from profstore.model.result import QuerySource
from profstore.paths.generic import GenericComputePath
from profstore.paths.registry import GENERIC, path_for, selector_of

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.specialized_leaves import (
    SQL,
    SYM,
    add,
    dfc,
    li_leaf,
    linear,
    mla,
    quantize,
    sfa_leaf,
)

VERSIONS = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend"
EXPECTED_PATH = {
    "moe_fused": "moe_fused",
    "elementwise": "elementwise",
    "attention_lightning_indexer": "attention_lightning_indexer",
    "attention_sparse_sharedkv": "attention_sparse_sharedkv",
    "scatter_nd_update_mla": "scatter_nd_update_mla",
    "compute_scale": "compute_scale",
    "quantized_matmul": "quantized_matmul",
}
DOCUMENTED_STABLE_MISSES = {
    ("vllm0.13.0_torch2.8.0_cann8.3", "DynamicBlockQuant"): "no DynamicBlockQuant.csv (RFC §4.4.2)",
    ("vllm0.15.0_torch2.9.0_cann8.5", "DynamicBlockQuant"): "no DynamicBlockQuant.csv (RFC §4.4.2)",
    ("vllm0.18.0_torch2.9.0_cann8.5", "DynamicBlockQuant"): "no DynamicBlockQuant.csv (RFC §4.4.2)",
    ("vllm0.15.0_torch2.9.0_cann8.5", "Div"): "v0.15 has no Div.csv; RealDiv is not mapped",
}

pytestmark = requires_perfdb


def phase2_entries():
    for version in sorted(VERSIONS.iterdir()):
        mapping = load_mapping(version / "op_mapping.yaml")
        for op, entry in mapping.entries.items():
            if selector_of(entry) in EXPECTED_PATH:
                yield version, op, entry


def test_every_phase2_selector_reaches_its_target_builder():
    seen = set()
    for version, op, entry in phase2_entries():
        path = path_for(selector_of(entry), entry.kernels[0])
        assert path is not GENERIC, (version.name, op)
        assert path.name == EXPECTED_PATH[selector_of(entry)], (version.name, op)
        seen.add(selector_of(entry))
    assert seen == set(EXPECTED_PATH)


def test_every_kernel_has_a_csv_or_is_a_documented_stable_miss():
    missing = {}
    for version, op, entry in phase2_entries():
        csvs = {p.stem for p in version.glob("*.csv")}
        for kernel in entry.kernels:
            if kernel not in csvs:
                missing[(version.name, kernel)] = op
    assert set(missing) == set(DOCUMENTED_STABLE_MISSES)


@pytest.fixture()
def generic_forbidden(monkeypatch):
    """Any call into generic compute's target builder fails the test."""
    def forbidden(self, leaf, ctx):
        raise AssertionError(f"{leaf.op} reached generic compute")

    monkeypatch.setattr(GenericComputePath, "target_regime", forbidden)


SPECIALISED_LEAVES = [
    pytest.param(lambda: dfc(64), id="dfc-measured"),
    pytest.param(lambda: dfc(100_000), id="dfc-out-of-range"),
    pytest.param(lambda: dfc(64, suffix="_fp8", weight="float8_e4m3fn"), id="dfc-fp8"),
    pytest.param(lambda: add(24), id="add"),
    pytest.param(lambda: add(24, "float32"), id="add-foreign-dtype"),
    pytest.param(lambda: mla(4096), id="mla"),
    pytest.param(lambda: li_leaf(100), id="lightning-indexer"),
    pytest.param(lambda: sfa_leaf(100, context={"phase": "prefill"}), id="sfa-no-grouping"),
    pytest.param(lambda: linear(SQL, 20, 7168, 4096, "int8", "bfloat16"), id="quant-matmul"),
    pytest.param(lambda: quantize(20, 7168), id="dynamic-quant"),
    pytest.param(lambda: quantize(20, 7168, dtype="float16"), id="dynamic-quant-fp16"),
]


@pytest.mark.parametrize("make_leaf", SPECIALISED_LEAVES)
def test_no_specialised_leaf_produces_a_generic_compute_answer(perfdb_store, generic_forbidden,
                                                               make_leaf):
    leaf = make_leaf()
    perfdb_store.clear_cache()
    result = perfdb_store.lookup(leaf, "v0.18")
    if result.hit:
        assert result.details.get("path") != "generic"
    assert result.details.get("selector") in EXPECTED_PATH


def test_dynamic_quant_symmetric_is_routed_by_compute_subcategory():
    mapping = load_mapping(VERSIONS / "vllm0.18.0_torch2.9.0_cann8.5" / "op_mapping.yaml")
    assert selector_of(mapping.entry(SYM)) == "compute_scale"
    assert selector_of(mapping.entry(SQL)) == "quantized_matmul"


def test_one_leaf_gets_exact_first_and_interpolation_only_after_a_miss(perfdb_store):
    """RFC §7.3.8 for a specialised path: the same leaf family answers MEASURED at a
    measured coordinate and INTERPOLATED between, each exactly once."""
    measured = perfdb_store.lookup(quantize(20, 7168), "v0.18")
    assert measured.source is QuerySource.MEASURED
    assert measured.details["method"] == "exact_coordinate"
    assert measured.details["exact_owner"] == "path"
