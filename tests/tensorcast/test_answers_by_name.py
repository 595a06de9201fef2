"""ProfstoreDataSource answers an op whose answer reads none of its arguments (zero_cost,
accepted_miss) by its name, without converting the invocation (ADR 0130), and reports the
simulation shapes its leaf would have."""

from __future__ import annotations

import pytest
from profstore.api import Store
from profstore.model.result import QuerySource
from profstore.tensorcast import ProfstoreDataSource
from profstore.tensorcast.convert import invocation_shapes
from profstore.tensorcast.tensorcast_result import ShapeMatchInfo, simulation_shapes

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.torch_fakes import (
    CASES,
    EXPECTED,
    FakeOp,
    Overload,
    SymbolicShapeTensor,
    fake_tensor,
)

RMS = "tensor_cast.rms_norm.default"
VIEW = "aten.view.default"
INDEX = "aten.index.Tensor"
NOTE = "host-side index"


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("by_name")
    rows = [Row([[8, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[8, 7168]], ["DT_BF16"], 10.0)]
    entries = {RMS: {"kernel_type": "RmsNorm"}, VIEW: {"zero_cost": True},
               INDEX: {"accepted_miss": NOTE}}
    write_version(tmp / "data", {"RmsNorm": rows}, mapping_doc(entries))
    with Store.open(build_database(tmp)) as store:
        yield store


@pytest.fixture()
def source(small_store):
    return ProfstoreDataSource(small_store, "v0.18", tp_size=4, details="compact")


def view(*args):
    return FakeOp(Overload(VIEW), args, {}, fake_tensor((56, 1024), "bfloat16"))


def test_a_zero_cost_op_is_answered_without_a_leaf(source):
    answer = source.lookup(view(fake_tensor((8, 7168), "bfloat16"), [56, 1024]))
    assert (answer.latency_us, answer.source) == (0.0, QuerySource.MEASURED)
    assert answer.details == {"kernel_type": "", "method": "zero_cost", "zero_cost": True}
    assert answer.shape_match_info == ShapeMatchInfo([[8, 7168]], [], "zero_cost")
    assert source.last_leaf is None
    assert source.last_shape_match_info == answer.shape_match_info
    assert (source.last_miss_reason, source.last_miss_details) == (None, None)


def test_the_answer_is_the_one_its_leaf_gets(source, small_store):
    op = view(fake_tensor((8, 7168), "bfloat16"), [56, 1024])
    source.lookup(op)
    by_leaf = small_store.lookup(source.to_leaf(op), "v0.18")
    assert source.last_result.as_dict() == by_leaf.as_dict()


def test_an_accepted_miss_is_answered_by_its_name_with_nested_tensors(source):
    op = FakeOp(Overload(INDEX), (fake_tensor((8, 7168), "bfloat16"),
                                  [fake_tensor((4,), "int64"), None, fake_tensor((), "int64")]))
    answer = source.lookup(op)
    assert (answer.latency_us, answer.all_details["note"]) == (0.0, NOTE)
    # lists flattened, the scalar tensor left out, as simulation_shapes of the leaf
    assert answer.shape_match_info.simulation_shapes == [[8, 7168], [4]]


def test_numbers_with_a_shape_are_no_simulation_shapes(source):
    import numpy as np

    op = view(fake_tensor((8, 7168), "bfloat16"), np.int64(56), [np.float32(1.0), 1024])
    answer = source.lookup(op)
    # numpy scalars have .shape () and .dtype; the leaf reads them as numbers
    assert answer.shape_match_info.simulation_shapes == [[8, 7168]]
    assert simulation_shapes(source.to_leaf(op)) == [[8, 7168]]


def test_arguments_that_would_not_convert_do_not_change_a_zero_cost_answer(source):
    answer = source.lookup(view(fake_tensor((8, 7168), "complex128"), [56, 1024]))
    assert (answer.latency_us, answer.details["method"]) == (0.0, "zero_cost")


def test_a_shape_that_cannot_be_read_is_reported_by_the_conversion(source):
    assert source.lookup(view(SymbolicShapeTensor(), [56, 1024])) is None
    assert source.last_miss_reason == "invalid_descriptor"
    assert source.last_miss_details["message"] == "RuntimeError: symbolic shape"


def test_an_op_that_needs_its_arguments_is_asked_by_name_once(source, monkeypatch):
    from profstore.tensorcast import named_answers

    asked = []
    monkeypatch.setattr(named_answers, "answer_by_name", lambda op, profile: asked.append(op))
    answers = [source.lookup(FakeOp(Overload(RMS), (fake_tensor((tokens, 7168), "bfloat16"),
                                                    fake_tensor((7168,), "bfloat16"), 1e-6)))
               for tokens in (8, 8, 16)]
    assert asked == [RMS]
    # RmsNorm.csv of the fixture: 10.0 us at 8 tokens, its only row (16 is beyond it)
    assert (answers[0].latency_us, answers[1].latency_us, answers[2]) == (10.0, 10.0, None)


@pytest.mark.parametrize("build", CASES, ids=lambda f: f.__name__)
def test_invocation_shapes_are_the_leafs_simulation_shapes(build):
    op = build(fake_tensor, lambda name: name)
    assert invocation_shapes(op) == simulation_shapes(EXPECTED[build])


def test_an_answer_by_name_is_made_once_and_each_call_gets_its_own_shapes(source, monkeypatch):
    from profstore.tensorcast import named_answers

    made = []
    real = named_answers.answer_by_name
    monkeypatch.setattr(named_answers, "answer_by_name",
                        lambda op, profile: made.append(op) or real(op, profile))
    first = source.lookup(view(fake_tensor((8, 7168), "bfloat16"), [56, 1024]))
    second = source.lookup(view(fake_tensor((4, 4096), "bfloat16"), [16, 1024]))
    assert made == [VIEW]
    assert first.shape_match_info == ShapeMatchInfo([[8, 7168]], [], "zero_cost")
    assert second.shape_match_info == ShapeMatchInfo([[4, 4096]], [], "zero_cost")
    assert source.last_shape_match_info == second.shape_match_info
    assert (second.latency_us, second.details) == (0.0, first.details)


def test_a_new_profile_asks_every_op_by_name_again(source, small_store, monkeypatch):
    """A re-ingest gives the store a new profile (another mapping, perhaps): the ops known
    by name, or known to need their arguments, are asked again."""
    from dataclasses import replace

    from profstore.tensorcast import named_answers

    made = []
    real = named_answers.answer_by_name
    monkeypatch.setattr(named_answers, "answer_by_name",
                        lambda op, profile: made.append(op) or real(op, profile))
    rms = FakeOp(Overload(RMS), (fake_tensor((8, 7168), "bfloat16"),
                                 fake_tensor((7168,), "bfloat16"), 1e-6))
    source.lookup(view(fake_tensor((8, 7168), "bfloat16"), [56, 1024]))
    source.lookup(rms)
    reingested = replace(small_store.profile("v0.18"))
    monkeypatch.setattr(small_store, "profile", lambda version: reingested)
    source.lookup(view(fake_tensor((8, 7168), "bfloat16"), [56, 1024]))
    source.lookup(rms)
    assert made == [VIEW, RMS, VIEW, RMS]
