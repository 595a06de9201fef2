"""Fuzzed op_mapping.yaml: a mapping loads (with its problems listed) or raises MappingError.

Two kinds of input: the text of a realistic mapping mutated character by character
(broken indentation, quotes, anchors, tags, unicode), and its data with subtrees
replaced by arbitrary values, dumped back to YAML. A mapping that loads must also
survive what ingest does with it: stored as a JSON document and rebuilt by a reader.
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from profstore.model.mapping import MappingError, VersionMapping, load_mapping

from tests.robustness import FUZZ, HUGE_INT, mutated, mutated_tree

pytestmark = pytest.mark.no_database

MAPPING_TEXT = """\
version: "0.18.0"
device: ATLAS_800_A3_752T_128G_DIE
collection_date: 2026-03-27
communication_data_ref: "../../hccl/v8.5/"
communication_fallback: analytic
latency_policy:
  kernel_overrides:
    QuantBatchMatmulV3:
      profiling_core_envelope_fallback:
        max_duration_to_core_ratio: 1.5
    LightningIndexer:
      prefer_profiling_rows: true
query_selection_policy:
  kernel_overrides:
    FusedInferAttentionScore:
      require_semantic_unique: true
interpolation_policy:
  kernel_overrides:
    MatMulV2:
      max_interpolation_dim: 1
    ConcatD:
      generic_compute:
        axis: output_numel
    FusedInferAttentionScore:
      axis_transform: sqrt_seq
operator_mappings:
  "aten.mm.default":
    kernel_type: MatMulV2
    alternate_kernel_types: [MatMulV3, MatMulCommon]
    notes: >
      [HIGH] op-plugin: MmKernelNpuOpApi.cpp → aclnnMm (ND).
  "aten.embedding.default":
    kernel_type: GatherV2
    tc_input_count: 2
  "tensor_cast.dispatch_ffn_combine.default":
    kernel_type: DispatchFFNCombine
    query_mode: moe_fused
  "aten.view.default":
    zero_cost: true
    accepted_miss: "metadata only"
  "tensor_cast.mla.default":
    composite: true
    sub_kernels: [MatMulV2, FusedInferAttentionScore]
"""
MAPPING_DATA = yaml.safe_load(MAPPING_TEXT)


def assert_loads_or_refuses(text: str) -> None:
    try:
        mapping = load_mapping(text, is_text=True)
    except MappingError as exc:
        assert str(exc).startswith("<text>")
        return
    assert isinstance(mapping, VersionMapping)
    assert all(isinstance(p, str) and p for p in mapping.problems)
    document = json.loads(json.dumps(mapping.to_document(), sort_keys=True))
    rebuilt = VersionMapping.from_document(document)
    assert json.dumps(rebuilt.to_document(), sort_keys=True) == json.dumps(document,
                                                                           sort_keys=True)
    for op, entry in mapping.entries.items():
        assert entry.op == op
        assert all(isinstance(k, str) for k in entry.kernels)


def test_the_seed_mapping_loads_cleanly():
    mapping = load_mapping(MAPPING_TEXT, is_text=True)
    assert mapping.problems == ()
    assert mapping.entries["aten.mm.default"].kernels == ("MatMulV2", "MatMulV3", "MatMulCommon")
    assert mapping.policy("MatMulV2").max_interpolation_dim == 1
    assert mapping.policy("QuantBatchMatmulV3").core_envelope_ratio == 1.5


@FUZZ
@given(text=mutated([MAPPING_TEXT], max_steps=6))
def test_mutated_mapping_text_loads_or_raises_mapping_error(text):
    assert_loads_or_refuses(text)


@FUZZ
@given(data=mutated_tree([MAPPING_DATA], max_steps=4))
def test_mutated_mapping_data_loads_or_raises_mapping_error(data):
    assert_loads_or_refuses(yaml.safe_dump(data, allow_unicode=True))


def test_a_bad_field_is_a_problem_and_the_rest_loads():
    text = MAPPING_TEXT.replace("tc_input_count: 2", "tc_input_count: -2")
    mapping = load_mapping(text, is_text=True)
    assert mapping.entries["aten.embedding.default"].tc_input_count is None
    assert any("tc_input_count" in p and "positive integer" in p for p in mapping.problems)
    assert mapping.entries["aten.mm.default"].kernel_type == "MatMulV2"


def test_a_control_character_is_a_mapping_error_naming_it():
    """Found by the fuzzer: PyYAML's reader refuses control characters while the loader
    is being built, which used to escape as a bare ``ReaderError``."""
    try:
        load_mapping("\x1f" + MAPPING_TEXT, is_text=True)
    except MappingError as exc:
        assert "#x001f" in str(exc) and str(exc).startswith("<text>")
    else:
        raise AssertionError("a control character must be refused")


def test_an_integer_too_long_to_convert_is_a_mapping_error():
    """Found by the fuzzer: PyYAML's int() of a 5000-digit literal raised a bare
    ValueError; it is a broken mapping like any other."""
    text = MAPPING_TEXT.replace("tc_input_count: 2", f"tc_input_count: {HUGE_INT}")
    try:
        load_mapping(text, is_text=True)
    except MappingError as exc:
        assert str(exc).startswith("<text>: broken YAML") and "4300 digits" in str(exc)
    else:
        raise AssertionError("a 5000-digit integer must be refused")


def test_an_integer_beyond_sql_integer_is_a_field_problem():
    mapping = load_mapping(MAPPING_TEXT.replace("tc_input_count: 2", "tc_input_count: 2147483648"),
                           is_text=True)
    assert mapping.entries["aten.embedding.default"].tc_input_count is None
    assert mapping.problems == ("<text>: entry 'aten.embedding.default': tc_input_count "
                                "2147483648 is not below 2^31 (an SQL INTEGER); field ignored",)
