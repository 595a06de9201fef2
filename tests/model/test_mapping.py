"""model/mapping.py: the op_mapping.yaml model, on the three real YAMLs and on small fixtures."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from profstore.model.mapping import (
    KernelPolicy,
    MappingEntry,
    MappingError,
    VersionMapping,
    load_mapping,
    merge_overlay,
)
from profstore.paths.registry import selector_of

from tests.support.paths import PERFDB
from tests.support.prerequisites import require

VLLM_ROOT = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend"
VERSION_DIRS = {
    "v0.13": "vllm0.13.0_torch2.8.0_cann8.3",
    "v0.15": "vllm0.15.0_torch2.9.0_cann8.5",
    "v0.18": "vllm0.18.0_torch2.9.0_cann8.5",
}
EXPECTED_COUNTS = {"v0.13": 113, "v0.15": 143, "v0.18": 151}


def yaml_path(version: str) -> Path:
    """A real YAML of the corpus (a skip outside CI, a failure in CI, when it is absent)."""
    path = VLLM_ROOT / VERSION_DIRS[version] / "op_mapping.yaml"
    require(path.is_file(), f"the profiling corpus beside the checkout ({path})")
    return path


@pytest.fixture(scope="module")
def real() -> dict[str, VersionMapping]:
    return {version: load_mapping(yaml_path(version)) for version in VERSION_DIRS}


def load_text(text: str) -> VersionMapping:
    """Load YAML text; indented (triple-quoted) text is dedented first."""
    return load_mapping(textwrap.dedent(text), is_text=True)


def operator_keys_by_regex(text: str) -> list[str]:
    """An independent count: the 2-space-indented keys of the operator_mappings block."""
    block = re.search(r"^operator_mappings:[^\n]*\n(.*?)(?=^[A-Za-z_]|\Z)", text, re.M | re.S)
    assert block is not None
    keys = re.findall(r'^  ("[^"\n]+"|[A-Za-z_][\w.]*):(?:[ \t]|$)', block.group(1), re.M)
    return [key.strip('"') for key in keys]


# ------------------------------------------------------------------ the real YAMLs

@pytest.mark.parametrize("version", sorted(VERSION_DIRS))
def test_entry_count_matches_an_independent_count(real, version):
    keys = operator_keys_by_regex(yaml_path(version).read_text(encoding="utf-8"))
    assert len(keys) == len(set(keys)) == EXPECTED_COUNTS[version]
    assert len(real[version].entries) == EXPECTED_COUNTS[version]
    assert set(real[version].entries) == set(keys)
    assert real[version].problems == ()


def test_dfc_quant_is_moe_fused_and_keeps_its_raw_entry(real):
    entry = real["v0.18"].entry("tensor_cast.dispatch_ffn_combine_quant.default")
    assert selector_of(entry) == "moe_fused"
    assert entry.kernels == ("DispatchFFNCombine",)
    assert "embedded_compute" in entry.raw
    assert entry.raw["embedded_compute"][0]["kernel_type"] == "AddRmsNormBias"
    assert "notes" in entry.raw


def test_index_tensor_is_an_accepted_miss_in_v018_and_a_kernel_in_v013(real):
    v18 = real["v0.18"].entry("aten.index.Tensor")
    assert v18.accepted_miss and v18.accepted_miss.startswith("Conditional accepted miss")
    assert selector_of(v18) == "accepted_miss"
    v13 = real["v0.13"].entry("aten.index.Tensor")
    assert v13.kernel_type == "Index"
    assert v13.accepted_miss is None
    assert v13.kernels == ("Index", "GatherV2")


def test_concat_and_cache_mla_is_zero_cost_in_v018(real):
    entry = real["v0.18"].entry("tensor_cast.concat_and_cache_mla.default")
    assert entry.zero_cost and selector_of(entry) == "zero_cost"
    assert entry.kernels == ()


@pytest.mark.parametrize("version", sorted(VERSION_DIRS))
def test_static_quant_linear_is_quantized_matmul(real, version):
    entry = real[version].entry("tensor_cast.static_quant_linear.default")
    assert selector_of(entry) == "quantized_matmul"
    assert entry.tc_input_count == 2
    assert entry.expected_input_formats == ("ND", "FRACTAL_NZ")


def test_mtp_projection_query_mode_does_not_override_compute_subcategory(real):
    entry = real["v0.18"].entry("tensor_cast.static_quant_linear.default")
    assert entry.query_mode == "mtp_projection"
    assert entry.compute_subcategory == "quantized_matmul"
    assert selector_of(entry) == "quantized_matmul"


def test_native_layer_norm_in_v018(real):
    entry = real["v0.18"].entry("aten.native_layer_norm.default")
    assert entry.kernels == ("LayerNormV3", "LayerNormV3WithImplMode")
    assert entry.tc_input_count == 3
    assert selector_of(entry) == "generic"


def test_mul_tensor_selector_changes_between_versions(real):
    assert selector_of(real["v0.13"].entry("aten.mul.Tensor")) == "generic"
    assert selector_of(real["v0.18"].entry("aten.mul.Tensor")) == "elementwise"


@pytest.mark.parametrize("version", sorted(VERSION_DIRS))
def test_all_reduce_is_communication(real, version):
    entry = real[version].entry("tensor_cast.all_reduce.default")
    assert entry.is_communication and selector_of(entry) == "communication"


def test_phase2_selectors_in_v018(real):
    mapping = real["v0.18"]
    expected = {
        "tensor_cast.quant_lightning_indexer.default": "attention_lightning_indexer",
        "tensor_cast.sparse_attn_sharedkv.default": "attention_sparse_sharedkv",
        "tensor_cast.scatter_nd_update_mla.default": "scatter_nd_update_mla",
        "tensor_cast.attention.default": "attention_special",
        "tensor_cast.dynamic_quantize_symmetric.default": "compute_scale",
        "aten.div.Tensor": "zero_cost",
        "tensor_cast.matmul_all_reduce.default": "composite",
        "tensor_cast.dsa_indexer.default": "composite",
        "aten.mm.default": "generic",
    }
    assert {op: selector_of(mapping.entry(op)) for op in expected} == expected


def test_v018_policies(real):
    mapping = real["v0.18"]
    qbmm = mapping.policy("QuantBatchMatmulV3")
    assert qbmm.max_interpolation_dim == 1 and qbmm.core_envelope_ratio == 1.5
    indexer = mapping.policy("LightningIndexer")
    assert indexer.require_semantic_unique and indexer.prefer_profiling_rows
    assert mapping.policy("GatherV2").generic_axis == "output_numel"
    assert mapping.policy("FusedInferAttentionScore").axis_transform == "sqrt_seq"
    assert mapping.policy("FusedInferAttentionScore").require_semantic_unique
    assert mapping.policy("NoSuchKernel") == KernelPolicy()
    assert real["v0.13"].policy("LightningIndexer") == KernelPolicy()


def test_header_lookup_helpers_and_kernel_index(real):
    mapping = real["v0.18"]
    assert mapping.header["cann_version"] == "8.5"
    assert mapping.header["communication_data_ref"] == "../../hccl/v8.5/"
    assert "torch_npu_reference" not in mapping.header
    assert mapping.entry("torch.ops.aten.mm.default") is mapping.entry("aten.mm.default")
    assert mapping.entry("aten.no_such_op.default") is None
    kernels = mapping.kernels()
    assert {"MatMulV2", "LightningIndexer", "LightningIndexerVllm", "RmsNorm"} <= kernels
    users = [entry.op for entry in mapping.entries_for_kernel("MatMulV3")]
    assert users[0] == "aten.mm.default"
    assert "tensor_cast.matmul_all_reduce.default" in users  # named as a sub-kernel


@pytest.mark.parametrize("version", sorted(VERSION_DIRS))
def test_document_round_trip_through_json(real, version):
    mapping = real[version]
    doc = json.loads(json.dumps(mapping.to_document()))
    again = VersionMapping.from_document(doc)
    assert again == mapping
    assert {op: e.raw for op, e in again.entries.items()} == \
        {op: e.raw for op, e in mapping.entries.items()}
    assert again.to_document() == doc


# ------------------------------------------------------------------ bad input

MINIMAL = 'version: "9.9"\noperator_mappings:\n  "aten.mm.default":\n    kernel_type: MatMulV2\n'



def test_broken_yaml_names_the_line():
    text = textwrap.dedent("""\
        version: "1"
        operator_mappings:
          "aten.mm.default":
            kernel_type: MatMulV2
            alternate_kernel_types: [MatMulV3, MatMulCommon
          "aten.add.Tensor":
            kernel_type: Add
        """)
    with pytest.raises(MappingError, match=r"<text>: broken YAML at line 6") as info:
        load_mapping(text, is_text=True)
    assert "started at line 5" in str(info.value)


def test_broken_yaml_file_error_names_the_file(tmp_path):
    path = tmp_path / "op_mapping.yaml"
    path.write_text("operator_mappings: {a: [1, 2\n", encoding="utf-8")
    with pytest.raises(MappingError, match=re.escape(str(path)) + ".*line"):
        load_mapping(path)


@pytest.mark.parametrize("text, message", [
    ("- a\n- b\n", "top level is list"),
    ("", "top level is NoneType"),
    ("version: '1'\n", "no 'operator_mappings' mapping"),
    ("operator_mappings: [a, b]\n", "no 'operator_mappings' mapping"),
])
def test_unusable_shapes_raise(text, message):
    with pytest.raises(MappingError, match=message):
        load_mapping(text, is_text=True)


def test_missing_file_raises_mapping_error(tmp_path):
    with pytest.raises(MappingError, match="cannot read"):
        load_mapping(tmp_path / "absent.yaml")


def test_unknown_top_level_key_is_a_problem_and_the_rest_loads():
    mapping = load_text(MINIMAL + "surprise: 1\n")
    assert mapping.problems == ("<text>: unknown top-level key 'surprise' ignored",)
    assert mapping.entry("aten.mm.default").kernel_type == "MatMulV2"
    assert mapping.header == {"version": "9.9"}


def test_non_mapping_entry_is_skipped():
    mapping = load_text(MINIMAL + '  "aten.bad.default": MatMulV2\n')
    assert set(mapping.entries) == {"aten.mm.default"}
    assert mapping.problems == ("<text>: entry 'aten.bad.default' is not a mapping; "
                                "entry skipped",)


def test_duplicate_op_key_is_a_problem_and_the_later_wins():
    mapping = load_text(MINIMAL + '  "aten.mm.default":\n    kernel_type: MatMulV3\n')
    assert mapping.entry("aten.mm.default").kernel_type == "MatMulV3"
    assert mapping.problems == ("<text>: duplicate entry 'aten.mm.default' at line 5: "
                                "the later one wins",)


def test_duplicate_key_inside_an_entry_is_reported_as_a_key():
    mapping = load_text(MINIMAL + "    kernel_type: MatMulV3\n")
    assert mapping.entry("aten.mm.default").kernel_type == "MatMulV3"
    assert mapping.problems == ("<text>: duplicate key 'kernel_type' at line 5: "
                                "the later one wins",)


def test_bad_tc_input_count_is_ignored_with_a_problem():
    mapping = load_text(MINIMAL + "    tc_input_count: two\n")
    assert mapping.entry("aten.mm.default").tc_input_count is None
    assert mapping.problems == ("<text>: entry 'aten.mm.default': tc_input_count 'two' "
                                "is not a positive integer; field ignored",)


@pytest.mark.parametrize("line, field_name, value", [
    ("tc_input_count: 0", "tc_input_count", None),
    ("tc_input_count: true", "tc_input_count", None),
    ("alternate_kernel_types: MatMulV3", "alternate_kernel_types", ()),
    ("alternate_kernel_types: [MatMulV3, 7]", "alternate_kernel_types", ()),
    ("zero_cost: maybe", "zero_cost", False),
    ("kernel_type: [A, B]", "kernel_type", None),
])
def test_bad_field_types_are_ignored(line, field_name, value):
    mapping = load_text(MINIMAL.replace("kernel_type: MatMulV2", line))
    assert getattr(mapping.entry("aten.mm.default"), field_name) == value
    assert len(mapping.problems) == 1 and "field ignored" in mapping.problems[0]


def test_accepted_miss_true_gets_a_default_note():
    mapping = load_text(MINIMAL + "    accepted_miss: true\n")
    entry = mapping.entry("aten.mm.default")
    assert entry.accepted_miss == "accepted miss" and selector_of(entry) == "accepted_miss"


def test_unknown_compute_subcategory_fails_closed():
    mapping = load_text(MINIMAL + "    compute_subcategory: sparse_magic\n")
    assert selector_of(mapping.entry("aten.mm.default")) == "compute_subcategory_unknown"
    assert mapping.problems == ()


@pytest.mark.parametrize("fields, selector", [
    ({"category": "communication", "zero_cost": True}, "communication"),
    ({"zero_cost": True, "accepted_miss": "note"}, "zero_cost"),
    ({"accepted_miss": "note", "composite": True}, "accepted_miss"),
    ({"composite": True, "query_mode": "moe_fused"}, "composite"),
    ({"query_mode": "elementwise", "compute_subcategory": "compute_scale"}, "elementwise"),
    ({"query_mode": "mtp_projection", "compute_subcategory": "compute_scale"}, "compute_scale"),
    ({"query_mode": "mtp_projection"}, "generic"),
    ({"compute_subcategory": "other"}, "compute_subcategory_unknown"),
    ({}, "generic"),
])
def test_selector_precedence(fields, selector):
    assert selector_of(MappingEntry(op="x", kernel_type="K", **fields)) == selector


def test_kernels_property_has_no_none_and_no_duplicates():
    entry = MappingEntry(op="x", primary_kernel_type="P", alternate_kernel_types=("A", "P", "B"))
    assert entry.kernels == ("P", "A", "B")
    assert MappingEntry(op="y", kernel_type="K", primary_kernel_type="P").kernels == ("K",)


def test_bad_policy_values_are_problems():
    mapping = load_text(MINIMAL + textwrap.dedent("""\
    interpolation_policy:
      kernel_overrides:
        MatMulV2:
          max_interpolation_dim: 5
          axis_transform: linear
          generic_compute: {axis: io_numel}
          surprise: 1
    latency_policy:
      kernel_overrides:
        MatMulV2:
          profiling_core_envelope_fallback: {max_duration_to_core_ratio: -1}
    """))
    assert mapping.policy("MatMulV2") == KernelPolicy(axis_transform="linear")
    joined = "\n".join(mapping.problems)
    assert len(mapping.problems) == 4
    assert "MatMulV2.max_interpolation_dim: 5 is not an integer from 0 to 3" in joined
    assert "MatMulV2.generic_compute.axis: 'io_numel'" in joined
    assert "MatMulV2.surprise: unknown policy key ignored" in joined
    assert "max_duration_to_core_ratio: -1 is not a finite positive number" in joined


def test_merge_overlay_replaces_one_entry_and_adds_a_policy_override(real):
    base = real["v0.18"]
    overlay = load_text("""\
        operator_mappings:
          "aten.mul.Tensor":
            kernel_type: Mul
            tc_input_count: 2
          "tensor_cast.new_leaf.default":
            kernel_type: NewKernel
        interpolation_policy:
          kernel_overrides:
            LightningIndexer:
              max_interpolation_dim: 1
        query_selection_policy:
          kernel_overrides:
            KvRmsNormRopeCache:
              require_semantic_unique: false
        """)
    merged = merge_overlay(base, overlay)
    assert selector_of(merged.entry("aten.mul.Tensor")) == "generic"
    assert merged.entry("aten.mul.Tensor").tc_input_count == 2
    assert merged.entry("tensor_cast.new_leaf.default").kernels == ("NewKernel",)
    assert len(merged.entries) == len(base.entries) + 1
    untouched = [op for op in base.entries if op != "aten.mul.Tensor"]
    assert all(merged.entries[op] is base.entries[op] for op in untouched)
    indexer = merged.policy("LightningIndexer")
    assert indexer.max_interpolation_dim == 1
    assert indexer.require_semantic_unique and indexer.prefer_profiling_rows
    assert not merged.policy("KvRmsNormRopeCache").require_semantic_unique
    assert all(merged.policy(k) == p for k, p in base.policies.items()
               if k not in {"LightningIndexer", "KvRmsNormRopeCache"})
    assert merged.header == base.header
    assert selector_of(base.entry("aten.mul.Tensor")) == "elementwise"  # base unchanged
    again = VersionMapping.from_document(json.loads(json.dumps(merged.to_document())))
    assert again == merged


def test_merge_overlay_concatenates_problems():
    base = load_text(MINIMAL + "surprise: 1\n")
    overlay = load_text("operator_mappings: {}\nother: 2\n")
    merged = merge_overlay(base, overlay)
    assert merged.problems == base.problems + overlay.problems
    assert len(merged.problems) == 2


def test_raw_keeps_non_string_keys_json_compatible():
    mapping = load_text(MINIMAL + "    kernel_types_by_input_rank:\n      3: [A, B]\n")
    raw = mapping.entry("aten.mm.default").raw
    assert raw["kernel_types_by_input_rank"] == {"3": ["A", "B"]}
    assert json.loads(json.dumps(mapping.to_document()))["entries"]["aten.mm.default"]["raw"] \
        == dict(raw)


def test_from_document_rejects_other_shapes():
    with pytest.raises(MappingError, match="not a usable"):
        VersionMapping.from_document({"schema": "something/else"})
    with pytest.raises(MappingError, match="not a usable"):
        VersionMapping.from_document({"schema": "profstore.op_mapping/1", "entries": []})


def test_version_mapping_is_read_only(real):
    mapping = real["v0.18"]
    with pytest.raises(TypeError):
        mapping.entries["x"] = MappingEntry(op="x")  # type: ignore[index]
    with pytest.raises(AttributeError):
        mapping.problems = ()  # type: ignore[misc]


def test_one_reason_ranking_mechanism_for_groups_and_kernels():
    from profstore.model.result import ACROSS_AXIS_GROUPS, Reason, most_specific

    found = [Reason.INSUFFICIENT_CANDIDATES, Reason.DIMENSION_BLOCKED, Reason.OUTSIDE_RANGE]
    assert most_specific(found, ACROSS_AXIS_GROUPS) is Reason.OUTSIDE_RANGE
    assert most_specific(found) is Reason.DIMENSION_BLOCKED
    assert most_specific([Reason.CSV_NOT_FOUND, Reason.REGIME_MISMATCH]) is Reason.REGIME_MISMATCH
    assert most_specific([Reason.REGIME_MISMATCH, Reason.DIMENSION_BLOCKED]) is (
        Reason.DIMENSION_BLOCKED)
    assert most_specific([]) is None
