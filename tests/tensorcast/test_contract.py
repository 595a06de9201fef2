"""Upstream's result contract and the adapter's context, on a small fixture database.

What TensorCast's consumers read (tensor_cast/performance_model/empirical.py and
metrics_collector.py at 84fec85): ``details["zero_cost"]`` / ``details["kernel_type"]``,
``result.source`` compared with its own ``QuerySource``, ``shape_debug_statistics()``.
"""

from __future__ import annotations

import enum
import json

import pytest
from profstore.model.leaf_context import LeafContext
from profstore.model.result import QuerySource
from profstore.tensorcast import ProfstoreDataSource, ShapeMatchInfo, SubKernelShapeInfo

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.stores import opened_store
from tests.support.torch_fakes import FakeOp, Overload, fake_tensor

RMS = "tensor_cast.rms_norm.default"
ADD = "tensor_cast.add_rms.default"

#: TensorCast's enum as its module defines it (same module path, same member names).
UpstreamSource = enum.Enum(
    "QuerySource", "MEASURED INTERPOLATED EXTRAPOLATED PARTIAL",
    module="tensor_cast.performance_model.profiling_database.data_source")
#: An unrelated enum that happens to use the same names.
OtherSource = enum.Enum("QuerySource", "MEASURED PARTIAL", module="somewhere.else")


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("contract")
    rms = [Row([[n, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[n, 7168]], ["DT_BF16"], lat)
           for n, lat in ((8, 10.0), (16, 14.0))]
    add = [Row([[16, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[16, 7168]], ["DT_BF16"], 3.5)]
    entries = {
        RMS: {"kernel_type": "RmsNorm"},
        "aten.view.default": {"zero_cost": True, "kernel_type": "Reshape"},
        "aten.detach.default": {"zero_cost": True},
        "tensor_cast.absorbed.default": {"accepted_miss": "absorbed into a fused kernel"},
        ADD: {"composite": True, "sub_kernels": ["Add", "RmsNorm"]},
        "tensor_cast.half.default": {"composite": True, "sub_kernels": ["RmsNorm", "Absent"]},
    }
    write_version(tmp / "data", {"RmsNorm": rms, "Add": add}, mapping_doc(entries))
    return build_database(tmp)


store = opened_store("store_db", scope="module")


def op(name, tokens=16):
    return FakeOp(Overload(name), (fake_tensor((tokens, 7168), "bfloat16"),
                                   fake_tensor((7168,), "bfloat16"), 1e-6),
                  {}, fake_tensor((tokens, 7168), "bfloat16"))


@pytest.fixture()
def source(store):
    return ProfstoreDataSource(store, "v0.18")


def test_zero_cost_answers_carry_upstreams_flag_and_kernel_type(source):
    view = source.lookup(op("aten.view.default"))
    assert (view.latency_us, view.details["zero_cost"], view.details["kernel_type"]) == (
        0.0, True, "Reshape")
    assert source.lookup(op("aten.detach.default")).details["kernel_type"] == ""
    absorbed = source.lookup(op("tensor_cast.absorbed.default"))
    assert (absorbed.details["zero_cost"], absorbed.details["kernel_type"],
            absorbed.details["note"]) == (True, "accepted_miss", "absorbed into a fused kernel")
    assert view.shape_debug_statistics() == {"kernel_shapes": "", "shape_match_rule": "zero_cost"}


def test_a_measured_answer_is_not_zero_cost(source):
    assert "zero_cost" not in source.lookup(op(RMS)).details


def test_source_equals_upstreams_enum_members_by_name_only(source):
    result = source.lookup(op(RMS))
    assert result.source == UpstreamSource.MEASURED
    assert UpstreamSource.MEASURED == result.source  # noqa: SIM300 - the reflected side
    assert result.source != UpstreamSource.PARTIAL
    assert UpstreamSource.PARTIAL != result.source  # noqa: SIM300
    assert result.source.name == "MEASURED"
    assert result.source != OtherSource.MEASURED
    assert QuerySource.MEASURED == "MEASURED" and {QuerySource.MEASURED: 1}["MEASURED"] == 1


def test_shape_match_info_names_the_matched_csv_row(source):
    result = source.lookup(op(RMS, tokens=8))
    assert result.shape_match_info == ShapeMatchInfo([[8, 7168], [7168]], [[8, 7168], [7168]],
                                                     "base_exact")
    assert result.sub_kernel_shapes is None
    assert source.last_shape_match_info == result.shape_match_info


def test_a_miss_leaves_its_reason_as_the_shape_rule(source):
    assert source.lookup(op(RMS, tokens=128)) is None
    assert source.last_shape_match_info == ShapeMatchInfo([[128, 7168], [7168]], [],
                                                          "outside_range")


def test_an_interpolated_answer_names_its_heaviest_vertex(source):
    result = source.lookup(op(RMS, tokens=14))  # 10 + (14 - 10) * 6/8 = 13.0
    assert (result.latency_us, result.source) == (pytest.approx(13.0), QuerySource.INTERPOLATED)
    assert result.shape_match_info.kernel_shapes == [[16, 7168], [7168]]
    assert result.shape_match_info.shape_match_rule == "linear_1d"


def test_composite_lists_each_sub_kernel(source):
    result = source.lookup(op(ADD))
    assert result.latency_us == pytest.approx(3.5 + 14.0)
    assert result.sub_kernel_shapes == [
        SubKernelShapeInfo("Add", [[16, 7168], [7168]], [[16, 7168], [7168]], "base_exact"),
        SubKernelShapeInfo("RmsNorm", [[16, 7168], [7168]], [[16, 7168], [7168]], "base_exact"),
    ]
    assert json.loads(result.shape_debug_statistics()["sub_kernel_shapes"])[0] == {
        "kernel_type": "Add", "simulation_shapes": "[[16, 7168], [7168]]",
        "kernel_shapes": "[[16, 7168], [7168]]", "shape_match_rule": "base_exact"}


def test_an_answer_for_other_shapes_keeps_everything_else(source):
    """``with_simulation`` (an answer by name, ADR 0130): the simulation shapes replaced,
    in the answer and in each sub-kernel, the matched rows' shapes and rules kept."""
    composite = source.lookup(op(ADD)).with_simulation([[4, 7168]])
    assert composite.latency_us == pytest.approx(3.5 + 14.0)
    assert composite.sub_kernel_shapes == [
        SubKernelShapeInfo("Add", [[4, 7168]], [[16, 7168], [7168]], "base_exact"),
        SubKernelShapeInfo("RmsNorm", [[4, 7168]], [[16, 7168], [7168]], "base_exact"),
    ]
    single = source.lookup(op(RMS, tokens=14))
    moved = single.with_simulation([[2, 7168], [7168]])
    assert moved.shape_match_info == ShapeMatchInfo(
        [[2, 7168], [7168]], [[16, 7168], [7168]], "linear_1d")
    assert (moved.latency_us, moved.details, moved.all_details) == (
        single.latency_us, single.details, single.all_details)


def test_partial_composite_keeps_upstreams_missed_kernels(source):
    assert source.lookup(op("tensor_cast.half.default")) is None
    assert source.last_miss_reason == "partial_composite"
    assert list(source.last_miss_details["missed_kernels"]) == ["Absent"]
    assert source.last_miss_details["partial_latency_us"] == 14.0


# --- context -------------------------------------------------------------------------------

def test_a_fixed_context_is_merged_into_every_leaf(store):
    source = ProfstoreDataSource(store, "v0.18", ep_size=16,
                                 context={"phase": "decode", "num_requests": 4})
    assert source.to_leaf(op(RMS)).context == LeafContext(ep_size=16, phase="decode",
                                                          num_requests=4)


def test_a_callable_context_sees_the_invocation(store):
    seen = []

    def context(invocation):
        seen.append(str(invocation.func))
        return {"topology_tier": "intra_node", "num_devices": 8}

    source = ProfstoreDataSource(store, "v0.18", tp_size=8, context=context)
    assert source.to_leaf(op(RMS)).context == LeafContext(
        tp_size=8, topology_tier="intra_node", num_devices=8)
    assert seen == [RMS]


def test_the_invocations_phase_and_lengths_fill_the_context(store):
    source = ProfstoreDataSource(store, "v0.18", context={"phase": "prefill"})
    invocation = op(RMS)
    invocation.kwargs = {"is_decode_values": [True, True], "seq_lens_values": [300, 41],
                         "query_lens_values": [1, 1]}
    assert source.to_leaf(invocation).context == LeafContext(
        phase="decode", kv_lens=(300, 41), query_lens=(1, 1), num_requests=2)


def test_configured_lengths_win_over_the_invocations(store):
    source = ProfstoreDataSource(store, "v0.18", context={"kv_lens": [7]})
    invocation = op(RMS)
    invocation.kwargs = {"seq_lens_values": [300, 41]}
    assert source.to_leaf(invocation).context == LeafContext(kv_lens=(7,))


@pytest.mark.parametrize(("context", "message"), [
    ({"phase": "decode", "batch": 4}, "context: unknown key 'batch'"),
    ({"phase": "warmup"}, "context.phase: must be one of prefill, decode, mixed"),
    ({"num_requests": 0}, "context.num_requests: must be a positive integer, got 0"),
])
def test_a_bad_context_is_refused_at_construction(store, context, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        ProfstoreDataSource(store, "v0.18", context=context)


def test_a_callable_context_returning_a_bad_field_is_an_invalid_descriptor_miss(store):
    source = ProfstoreDataSource(store, "v0.18", context=lambda invocation: {"batch": 4})
    assert source.lookup(op(RMS)) is None
    assert source.last_miss_reason == "invalid_descriptor"
    assert source.last_miss_details["message"].startswith(
        "context(op_invoke_info): unknown key 'batch'")
