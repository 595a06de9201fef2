"""Copies and memos of the frozen leaf types: ``with_format``, ``unstated`` and
``with_tensors`` go through the validating constructor, ``with_formats`` validates the
formats it sets; the hash and the tensor inputs are found once per object and never
pickled."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.tensor_spec import TensorSpec

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


def test_with_formats_sets_the_unstated_tensors_of_the_named_arguments_only() -> None:
    """X states ND and keeps it although args[0] is named; W states none and takes the
    format of its argument, inside a list too; args[3] is not named and stays unstated."""
    leaf = LeafOp("aten.mm.default", args=[X, W, [W, None], W], kwargs={"scale": W},
                  outputs=[W], context=LeafContext(tp_size=2))
    copy = leaf.with_formats({"args[0]": "FRACTAL_NZ", "args[1]": " fractal_nz ",
                              "args[2]": "NC1HWC0", "kwargs.scale": "ND",
                              "outputs[0]": "FRACTAL_NZ", "outputs[1]": "ND"})
    nz, nc = TensorSpec((8, 16), "bfloat16", "FRACTAL_NZ"), TensorSpec((8, 16), "bfloat16",
                                                                      "NC1HWC0")
    expected = LeafOp("aten.mm.default", args=[X, nz, [nc, None], W],
                      kwargs={"scale": TensorSpec((8, 16), "bfloat16", "ND")}, outputs=[nz],
                      context=LeafContext(tp_size=2))
    assert copy == expected and hash(copy) == hash(expected)
    assert copy.tensor_inputs() == (X, nz, nc, W)
    assert leaf.args == (X, W, (W, None), W)
    assert leaf.with_formats({}) is leaf


def test_with_formats_refuses_what_the_constructor_refuses() -> None:
    leaf = LeafOp("aten.mm.default", args=[X, W])
    with pytest.raises(ValueError, match="^format: must be a non-empty string or null, "
                                         "got '  '$"):
        leaf.with_formats({"args[1]": "  "})


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
