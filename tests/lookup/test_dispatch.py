"""``answer_by_name``: the answers that read no argument of the leaf, made from the op's name
(store/lookup/dispatch.py), equal to what ``Store.lookup`` answers every leaf of the op."""

from __future__ import annotations

import pytest
from profstore.lookup.dispatch import answer_by_name
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.stores import opened_store

RMS = "tensor_cast.rms_norm.default"
NOTE = "host-side index, measured inside the gather kernel"
ENTRIES = {
    RMS: {"kernel_type": "RmsNorm"},
    "aten.view.default": {"zero_cost": True},
    "aten.index.Tensor": {"accepted_miss": NOTE},
    "tensor_cast.fused.default": {"composite": True, "sub_kernels": ["RmsNorm", "Absent"]},
}


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("dispatch")
    rows = [Row([[8, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[8, 7168]], ["DT_BF16"], 10.0)]
    write_version(root / "data", {"RmsNorm": rows}, mapping_doc(ENTRIES))
    return build_database(root)


store = opened_store("store_db", scope="module")


def leaf(op: str, *args) -> LeafOp:
    return LeafOp.from_json({"op": op, "args": list(args)})


def tensor(shape: list[int], dtype: str = "bfloat16") -> dict:
    return {"shape": shape, "dtype": dtype}


def test_a_zero_cost_op_is_answered_by_its_name(store):
    result = answer_by_name("aten.view.default", store.profile("v0.18"))
    assert (result.latency_us, result.source, result.reason) == (0.0, QuerySource.MEASURED, None)
    # the mapping's zero_cost entry (no kernel_type), the op, its selector and the version
    assert list(result.details.items()) == [
        ("method", "zero_cost"), ("zero_cost", True), ("kernel_type", ""),
        ("note", "mapping marks this op zero_cost"), ("op", "aten.view.default"),
        ("selector", "zero_cost"), ("version", "v0.18")]


def test_an_accepted_miss_is_answered_by_its_name_with_its_note(store):
    result = answer_by_name("aten.index.Tensor", store.profile("v0.18"))
    assert list(result.details.items()) == [
        ("method", "accepted_miss"), ("zero_cost", True), ("kernel_type", "accepted_miss"),
        ("note", NOTE), ("op", "aten.index.Tensor"), ("selector", "accepted_miss"),
        ("version", "v0.18")]


@pytest.mark.parametrize(("op", "args"), [
    ("aten.view.default", (tensor([8, 7168]), [56, 1024])),
    ("aten.view.default", (tensor([3, 5], "float32"), [15])),
    ("aten.view.default", ()),
    ("aten.index.Tensor", (tensor([8, 7168]), [tensor([4], "int64")])),
])
def test_every_leaf_of_the_op_gets_that_answer_from_lookup(store, op, args):
    assert store.lookup(leaf(op, *args), "v0.18").as_dict() == \
        answer_by_name(op, store.profile("v0.18")).as_dict()


@pytest.mark.parametrize("op", [RMS, "tensor_cast.fused.default", "aten.absent.default"])
def test_an_op_whose_answer_reads_its_arguments_has_none(store, op):
    assert answer_by_name(op, store.profile("v0.18")) is None
