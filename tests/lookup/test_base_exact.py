"""Phase 1 base exact lookup (DESIGN §6): signature matching, alternates, normalisers,
accounting entries, static composites and the latency-column policies."""

from __future__ import annotations

import pytest
from profstore.model.latency_column import CORE_ENVELOPE, PROFILING_AVERAGE
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.stores import opened_store

BF16 = "DT_BF16"
NOTE = "host-side index, measured inside the gather kernel"


def rms(tokens: int, latency: float, lead: tuple[int, ...] = ()) -> Row:
    return Row([[*lead, tokens, 7168], [7168]], [BF16, BF16], [[*lead, tokens, 7168]], [BF16],
               latency)


def add(tokens: int, latency: float) -> Row:
    return Row([[tokens, 7168], [tokens, 7168]], [BF16, BF16], [[tokens, 7168]], [BF16], latency)


def quant_mm(latency: float) -> Row:
    return Row([[16, 1024], [1024, 2048], [2048], [2048]], ["INT8", "INT8", "FLOAT", "FLOAT"],
               [[16, 2048]], [BF16], latency)


def nz_mm(latency: float) -> Row:
    return Row([[16, 1536], [96, 192, 16, 16]], [BF16, BF16], [[16, 3072]], [BF16], latency,
               formats=["ND", "FRACTAL_NZ"])


def vector(tokens: int, latency: float | None, core: str = "AI_VECTOR_CORE", **columns) -> Row:
    return Row([[tokens, 256]], [BF16], [[tokens, 256]], [BF16], latency, columns=columns,
               core=core)


def swiglu(tokens: int, latency: float) -> Row:
    return Row([[tokens, 3200]], [BF16], [[tokens, 1600]], [BF16], latency)


PROF = {PROFILING_AVERAGE: 12.0}
KERNELS = {
    "RmsNorm": [rms(4, 5.0), rms(8, 6.0), rms(16, 9.0, lead=(1,))],
    "RmsNormTail": [rms(8, 2.0)],
    "Add": [add(64, 3.0)],
    "AddAiCore": [add(64, 4.0), add(128, 7.0)],
    "WeightQuantMM": [quant_mm(8.0)],
    "MatMulV2": [nz_mm(11.0)],
    "SwiGlu": [swiglu(8, 4.0), swiglu(32, 10.0)],
    "ProfThing": [vector(8, 10.0, **PROF), vector(16, None, **{PROFILING_AVERAGE: 14.0})],
    "PlainThing": [vector(8, 10.0, **PROF)],
    "MixKernel": [
        vector(8, None, "MIX_AIC", **{PROFILING_AVERAGE: 30.0, "Profiling Average aicore_time(us)":
                                      10.0, "Profiling Average aiv_time(us)": 12.0}),
        vector(16, None, "MIX_AIC", **{PROFILING_AVERAGE: 15.0, "Profiling Average aicore_time(us)":
                                       10.0, "Profiling Average aiv_time(us)": 12.0}),
        vector(32, None, **{PROFILING_AVERAGE: 30.0, "Profiling Average aicore_time(us)": 10.0}),
        vector(64, 20.0, "MIX_AIC", **{PROFILING_AVERAGE: 30.0,
                                       "Profiling Average aicore_time(us)": 10.0}),
    ],
}
ENTRIES = {
    "tensor_cast.rms_norm.default": {"kernel_type": "RmsNorm"},
    "aten.add.Tensor": {"kernel_type": "Add", "alternate_kernel_types": ["AddAiCore"]},
    "test.quant_mm_tc2": {"kernel_type": "WeightQuantMM", "tc_input_count": 2},
    "test.quant_mm_all": {"kernel_type": "WeightQuantMM"},
    "aten.mm.default": {"kernel_type": "MatMulV2"},
    "tensor_cast.swiglu.default": {"kernel_type": "SwiGlu"},
    "test.prof": {"kernel_type": "ProfThing"},
    "test.plain": {"kernel_type": "PlainThing"},
    "test.mix": {"kernel_type": "MixKernel"},
    "aten.view.default": {"zero_cost": True},
    "aten.index.Tensor": {"accepted_miss": NOTE},
    "tensor_cast.rms_norm_dynamic_quant_symmetric.default": {
        "composite": True, "sub_kernels": ["RmsNorm", "DynamicQuant"]},
    "test.norm_pair": {"composite": True, "sub_kernels": ["RmsNorm", "RmsNormTail"]},
}
LATENCY_POLICY = {"kernel_overrides": {
    "ProfThing": {"prefer_profiling_rows": True},
    "MixKernel": {"profiling_core_envelope_fallback": {"max_duration_to_core_ratio": 1.5}},
}}


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("base_exact")
    write_version(root / "data", KERNELS, mapping_doc(ENTRIES, latency_policy=LATENCY_POLICY))
    return build_database(root)


store = opened_store("store_db", scope="module")


def tensor(shape: list[int], dtype: str = "bfloat16", fmt: str | None = None) -> dict:
    return {"shape": shape, "dtype": dtype, **({"format": fmt} if fmt else {})}


def leaf(op: str, *args, outputs: list | None = None) -> LeafOp:
    return LeafOp.from_json({"op": op, "args": list(args), "outputs": outputs or []})


def norm(shape: list[int], dtype: str = "bfloat16", op: str = "tensor_cast.rms_norm.default"
         ) -> LeafOp:
    return leaf(op, tensor(shape, dtype), tensor([7168], dtype), 1e-6,
                outputs=[tensor(shape, dtype)])


def lookup(store, op_leaf: LeafOp, **kw):
    return store.lookup(op_leaf, "v0.18", **kw)


def test_primary_kernel_hit(store):
    result = lookup(store, leaf("aten.add.Tensor", tensor([64, 7168]), tensor([64, 7168])))
    assert (result.latency_us, result.source) == (3.0, QuerySource.MEASURED)
    assert result.details["method"] == "base_exact"
    assert result.details["kernel_type"] == "Add"
    assert "fallback_from" not in result.details


def test_alternate_only_after_the_primary_misses(store):
    result = lookup(store, leaf("aten.add.Tensor", tensor([128, 7168]), tensor([128, 7168])))
    assert result.latency_us == 7.0
    assert result.details["kernel_type"] == "AddAiCore"
    assert result.details["fallback_from"] == "Add"


def test_tc_input_count_truncates_the_signature(store):
    args = (tensor([16, 1024], "int8"), tensor([1024, 2048], "int8"), tensor([1], "float32"))
    assert lookup(store, leaf("test.quant_mm_tc2", *args)).latency_us == 8.0
    full = lookup(store, leaf("test.quant_mm_all", *args), interpolation=False)
    assert full.reason is Reason.NO_EXACT_MATCH


def test_fractal_nz_rows_match_logical_weights(store):
    x = tensor([16, 1536])
    assert lookup(store, leaf("aten.mm.default", x, tensor([1536, 3072]))).latency_us == 11.0
    physical = tensor([96, 192, 16, 16], fmt="FRACTAL_NZ")
    assert lookup(store, leaf("aten.mm.default", x, physical)).latency_us == 11.0


def test_leading_batch_one_is_stripped_on_either_side(store):
    assert lookup(store, norm([1, 4, 7168])).latency_us == 5.0
    assert lookup(store, norm([16, 7168])).latency_us == 9.0
    assert lookup(store, norm([1, 16, 7168])).latency_us == 9.0


def test_float16_is_read_as_bf16(store):
    result = lookup(store, norm([8, 7168], dtype="float16"))
    assert result.latency_us == 6.0
    assert result.details["exact_key"].endswith(f"7168:{BF16}")


def test_swiglu_pair_is_one_tensor_with_the_last_dim_doubled(store):
    def call(tokens: int) -> LeafOp:
        half = tensor([1, tokens, 1600])
        return leaf("tensor_cast.swiglu.default", half, half, outputs=[half])

    assert lookup(store, call(8)).latency_us == 4.0
    between = lookup(store, call(16))
    assert between.source is QuerySource.INTERPOLATED
    assert between.latency_us == pytest.approx(4.0 + 6.0 * 8 / 24)


def test_zero_cost_answers_zero(store):
    result = lookup(store, leaf("aten.view.default", tensor([8, 7168]), [56, 1024]))
    assert (result.latency_us, result.source) == (0.0, QuerySource.MEASURED)
    assert result.details["method"] == "zero_cost"


def test_accepted_miss_answers_zero_with_its_note(store):
    result = lookup(store, leaf("aten.index.Tensor", tensor([8, 7168])))
    assert (result.latency_us, result.source, result.reason) == (0.0, QuerySource.MEASURED, None)
    assert (result.details["method"], result.details["note"]) == ("accepted_miss", NOTE)


def test_unmapped_op(store):
    result = lookup(store, leaf("aten.bitwise_and.Tensor", tensor([8], "bool")))
    assert result.reason is Reason.UNMAPPED
    assert result.latency_us is None


def test_composite_with_a_missing_child_is_partial(store):
    op = "tensor_cast.rms_norm_dynamic_quant_symmetric.default"
    result = lookup(store, norm([8, 7168], op=op))
    assert (result.latency_us, result.source) == (6.0, QuerySource.PARTIAL)
    assert result.reason is Reason.PARTIAL_COMPOSITE
    assert result.confidence == 0.5
    assert result.details["hit_kernels"] == {"RmsNorm": 6.0}
    assert result.details["missed_kernels"] == {"DynamicQuant": "csv_not_found"}


def test_complete_composite_sums_its_children(store):
    result = lookup(store, norm([8, 7168], op="test.norm_pair"))
    assert (result.latency_us, result.source) == (8.0, QuerySource.MEASURED)
    assert result.details["hit_kernels"] == {"RmsNorm": 6.0, "RmsNormTail": 2.0}


def test_prefer_profiling_rows_selects_the_profiling_column(store):
    prof = lookup(store, leaf("test.prof", tensor([8, 256])))
    assert (prof.latency_us, prof.details["latency_column"]) == (12.0, PROFILING_AVERAGE)
    plain = lookup(store, leaf("test.plain", tensor([8, 256])))
    assert (plain.latency_us, plain.details["latency_column"]) == (10.0, "Average Duration(us)")


@pytest.mark.parametrize(("tokens", "latency", "column"), [
    (8, 12.0, CORE_ENVELOPE),           # MIX_AIC, 30 > 1.5 × max(10, 12): the envelope
    (16, 15.0, PROFILING_AVERAGE),      # MIX_AIC, 15 ≤ 18: the profiling duration stands
    (32, 30.0, PROFILING_AVERAGE),      # not MIX_AIC: the rule does not apply
    (64, 20.0, "Average Duration(us)"),  # a replay duration is never replaced
])
def test_core_envelope_rule_on_mix_aic_rows(store, tokens, latency, column):
    result = lookup(store, leaf("test.mix", tensor([tokens, 256])))
    assert (result.latency_us, result.details["latency_column"]) == (latency, column)
