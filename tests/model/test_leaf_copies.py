"""Copies and memos of the frozen leaf types: ``with_format``, ``unstated`` and
``with_tensors`` go through the validating constructor; the hash and the tensor inputs are
found once per object and never pickled."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from profstore.model.leaf import LeafOp, TensorSpec
from profstore.model.leaf_context import LeafContext

X = TensorSpec((4, 8), "bfloat16", "ND")
W = TensorSpec((8, 16), "bfloat16", None)


def test_with_format_keeps_the_other_fields_and_clears_the_default() -> None:
    defaulted = TensorSpec.from_json({"shape": [2], "dtype": "int64", "values": [3, 5]})
    assert defaulted.format_defaulted and defaulted.format == "ND"
    assert defaulted.with_format(" fractal_nz ") == TensorSpec((2,), "int64", "FRACTAL_NZ",
                                                               (3, 5), False)
    assert defaulted.unstated() == TensorSpec((2,), "int64", None, (3, 5), False)


@pytest.mark.parametrize(("fmt", "message"), [
    (None, "format: must be a non-empty string or null, got None"),
    ("  ", "format: must be a non-empty string or null, got '  '"),
    (7, "format: must be a non-empty string or null, got 7"),
])
def test_with_format_refuses_what_the_constructor_refuses(fmt: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        X.with_format(fmt)  # type: ignore[arg-type]


def test_with_tensors_normalises_like_the_constructor() -> None:
    leaf = LeafOp("aten.mm.default", args=[X, W], outputs=[X],
                  context=LeafContext(tp_size=2))
    copy = leaf.with_tensors((X, [W.with_format("ND"), None]),  # type: ignore[arg-type]
                             (("b", 1), ("a", 2.5)), (X,))
    assert copy == LeafOp("aten.mm.default", args=[X, (TensorSpec((8, 16), "bfloat16", "ND"),
                                                       None)],
                          kwargs={"a": 2.5, "b": 1}, outputs=[X],
                          context=LeafContext(tp_size=2))
    assert copy.kwargs == (("a", 2.5), ("b", 1))
    assert copy.args[1] == (TensorSpec((8, 16), "bfloat16", "ND"), None)
    assert hash(copy) == hash(LeafOp.from_json(copy.to_json()))
    assert leaf.args == (X, W)


def test_with_tensors_refuses_an_invalid_argument_by_its_path() -> None:
    leaf = LeafOp("aten.mm.default", args=[X, W])
    with pytest.raises(ValueError, match=r"^args\[1\]: unsupported argument "):
        leaf.with_tensors((X, object()), (), ())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^outputs\[0\]: must be a tensor object, got 3$"):
        leaf.with_tensors((X, W), (), (3,))  # type: ignore[arg-type]


def test_the_memos_leave_the_value_frozen_equal_and_out_of_pickles() -> None:
    leaf = LeafOp("aten.mm.default", args=[X, [W, None], 1.0])
    fresh = LeafOp("aten.mm.default", args=[X, [W, None], 1.0])
    assert hash(leaf) == hash(("aten.mm.default", (X, (W, None), 1.0), (), (), LeafContext()))
    assert leaf.tensor_inputs() == (X, W)
    assert leaf.tensor_inputs() is leaf.tensor_inputs()
    assert leaf == fresh and hash(leaf) == hash(fresh)
    assert set(leaf.__getstate__()) == {"op", "args", "kwargs", "outputs", "context"}
    restored = pickle.loads(pickle.dumps(leaf))
    assert set(vars(restored)) == {"op", "args", "kwargs", "outputs", "context"}
    assert restored == leaf and hash(restored) == hash(leaf)
    with pytest.raises(dataclasses.FrozenInstanceError):
        leaf._hash = 0  # type: ignore[misc]
