"""The leaf descriptor: parsing, validation with field paths, round trips, hashing."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.tensor_spec import TensorSpec

# The DESIGN §3 example (dispatch_ffn_combine_quant, positions as in §8).
DFC_EXAMPLE: dict[str, Any] = {
    "op": "tensor_cast.dispatch_ffn_combine_quant.default",
    "args": [
        {"shape": [2, 4, 72, 7168], "dtype": "bfloat16"},
        {"shape": [576, 8], "dtype": "int32"},
        [{"shape": [16, 7168, 4096], "dtype": "int8", "format": "FRACTAL_NZ"}],
        [{"shape": [16, 4096], "dtype": "float32"}],
        [None],
        [None],
        "bfloat16",
        [{"shape": [16, 2048, 7168], "dtype": "int8", "format": "FRACTAL_NZ"}],
        [{"shape": [16, 7168], "dtype": "float32"}],
        [None],
        [None],
        "bfloat16",
        0,
        list(range(16)),
    ],
    "kwargs": {},
    "outputs": [{"shape": [576, 8, 7168], "dtype": "bfloat16"}],
    "context": {"ep_size": 16, "tp_size": 1, "phase": "decode"},
}

LAYER_NORM: dict[str, Any] = {
    "op": "aten.native_layer_norm.default",
    "args": [
        {"shape": [16, 7168], "dtype": "bfloat16"},
        [7168],
        {"shape": [7168], "dtype": "bfloat16"},
        {"shape": [7168], "dtype": "bfloat16"},
        1e-6,
    ],
    "outputs": [{"shape": [16, 7168], "dtype": "bfloat16"}, {"shape": [16, 1], "dtype": "float32"}],
}


def with_changes(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with the item at ``path`` replaced (or added)."""
    data = target = copy.deepcopy(base)
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


def tensor(shape: tuple[int, ...], dtype: str, fmt: str | None = None) -> TensorSpec:
    return TensorSpec(shape=shape, dtype=dtype, format=fmt)


def omitted(shape: tuple[int, ...], dtype: str) -> TensorSpec:
    """A descriptor tensor without a "format": ND by default (DESIGN §3)."""
    return TensorSpec(shape=shape, dtype=dtype, format="ND", format_defaulted=True)


# --- the DESIGN example -------------------------------------------------------------------


def test_dfc_example_parses_positionally() -> None:
    leaf = LeafOp.from_json(DFC_EXAMPLE)
    assert leaf.op == "tensor_cast.dispatch_ffn_combine_quant.default"
    assert len(leaf.args) == 14
    assert leaf.args[0] == omitted((2, 4, 72, 7168), "bfloat16")
    assert leaf.args[2] == (tensor((16, 7168, 4096), "int8", "FRACTAL_NZ"),)
    assert isinstance(leaf.args[2], tuple) and leaf.args[2][0].format == "FRACTAL_NZ"
    assert leaf.args[4] == (None,)
    assert leaf.args[6] == "bfloat16"
    assert leaf.args[12] == 0
    assert leaf.args[13] == tuple(range(16))
    assert all(isinstance(i, int) for i in leaf.args[13])
    assert leaf.kwargs == ()
    assert leaf.outputs == (omitted((576, 8, 7168), "bfloat16"),)
    assert leaf.context == LeafContext(ep_size=16, tp_size=1, phase="decode")


def test_dfc_example_round_trips_with_equal_hashes() -> None:
    leaf = LeafOp.from_json(DFC_EXAMPLE)
    again = LeafOp.from_json(leaf.to_json())
    assert again == leaf
    assert hash(again) == hash(leaf)
    via_text = LeafOp.from_json(json.dumps(leaf.to_json()))
    assert via_text == leaf and hash(via_text) == hash(leaf)


def test_dfc_tensor_inputs_in_order() -> None:
    leaf = LeafOp.from_json(DFC_EXAMPLE)
    assert list(leaf.tensor_inputs()) == [
        omitted((2, 4, 72, 7168), "bfloat16"),
        omitted((576, 8), "int32"),
        tensor((16, 7168, 4096), "int8", "FRACTAL_NZ"),
        omitted((16, 4096), "float32"),
        tensor((16, 2048, 7168), "int8", "FRACTAL_NZ"),
        omitted((16, 7168), "float32"),
    ]


def test_native_layer_norm_has_three_tensor_inputs() -> None:
    leaf = LeafOp.from_json(LAYER_NORM)
    assert leaf.args[1] == (7168,)
    assert leaf.arg(4) == 1e-6
    assert [t.shape for t in leaf.tensor_inputs()] == [(16, 7168), (7168,), (7168,)]


def test_to_json_omits_defaults() -> None:
    out = LeafOp.from_json(DFC_EXAMPLE).to_json()
    assert "kwargs" not in out
    assert out["args"][0] == {"shape": [2, 4, 72, 7168], "dtype": "bfloat16"}
    assert out["args"][2] == [{"shape": [16, 7168, 4096], "dtype": "int8", "format": "FRACTAL_NZ"}]
    assert out["context"] == {"ep_size": 16, "tp_size": 1, "phase": "decode"}
    assert "context" not in LeafOp.from_json(LAYER_NORM).to_json()
    assert json.loads(json.dumps(out)) == out


def test_leaves_work_as_cache_keys() -> None:
    calls = []

    @functools.lru_cache(maxsize=8)
    def lookup(leaf: LeafOp) -> int:
        calls.append(leaf)
        return len(calls)

    first = lookup(LeafOp.from_json(DFC_EXAMPLE))
    assert lookup(LeafOp.from_json(json.dumps(DFC_EXAMPLE))) == first
    assert len(calls) == 1


# --- normalisation ---------------------------------------------------------------------------


def test_prefixes_aliases_and_format_case_are_normalised() -> None:
    data = with_changes(DFC_EXAMPLE, ("args", 0, "dtype"), "torch.bfloat16")
    data = with_changes(data, ("outputs", 0, "dtype"), "torch.bfloat16")
    assert LeafOp.from_json(data) == LeafOp.from_json(DFC_EXAMPLE)
    assert TensorSpec((4,), "torch.half").dtype == "float16"
    nz = {"shape": [2], "dtype": "int8", "format": "fractal_nz"}
    leaf = LeafOp.from_json({"op": "torch.ops.aten.mm.default", "args": [nz]})
    assert leaf.op == "aten.mm.default"
    assert leaf.args[0].format == "FRACTAL_NZ"


def test_constructor_normalises_python_values() -> None:
    spec = TensorSpec([2, 3], "torch.float32", "nd", [1, 2, 3, 4, 5, 6.5])
    assert spec == TensorSpec((2, 3), "float32", "ND", (1, 2, 3, 4, 5, 6.5))
    leaf = LeafOp("aten.add.Tensor", args=[spec, [1, [2, None]]], kwargs={"b": 1, "a": "x"})
    assert leaf.args == (spec, (1, (2, None)))
    assert leaf.kwargs == (("a", "x"), ("b", 1))
    assert hash(leaf) == hash(LeafOp.from_json(leaf.to_json()))
    ctx = LeafContext(query_lens=[1, 2], phase="Decode")
    assert ctx.query_lens == (1, 2) and ctx.phase == "decode"


def test_descriptors_are_frozen() -> None:
    leaf = LeafOp.from_json(LAYER_NORM)
    with pytest.raises(dataclasses.FrozenInstanceError):
        leaf.op = "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        leaf.args[0].shape = (1,)


def test_kwargs_are_sorted_and_order_independent() -> None:
    a = LeafOp.from_json({"op": "x", "kwargs": {"b": 2, "a": [1, 2]}})
    b = LeafOp.from_json({"op": "x", "kwargs": {"a": [1, 2], "b": 2}})
    assert a == b and hash(a) == hash(b)
    assert a.kwargs == (("a", (1, 2)), ("b", 2))
    assert a.kwarg("a") == (1, 2) and a.kwarg("missing", 7) == 7
    assert a.to_json()["kwargs"] == {"a": [1, 2], "b": 2}
    assert LeafOp.from_json(a.to_json()) == a


def test_arg_accessor() -> None:
    leaf = LeafOp.from_json(DFC_EXAMPLE)
    assert leaf.arg(6) == "bfloat16"
    assert leaf.arg(4) == (None,)
    assert leaf.arg(14) is None and leaf.arg(99, "dflt") == "dflt"
    assert LeafOp.from_json({"op": "x", "args": [None]}).arg(0, "dflt") is None


def test_non_tensor_args_never_count_as_inputs() -> None:
    leaf = LeafOp.from_json({"op": "x", "args": [None, 3, 2.5, "s", True, [None, [1, 2]], []]})
    assert leaf.tensor_inputs() == ()


def test_nested_lists_flatten_in_order() -> None:
    t = [{"shape": [i], "dtype": "int8"} for i in range(4)]
    leaf = LeafOp.from_json({"op": "x", "args": [t[0], [[t[1], None], t[2]], 5, [t[3]]]})
    assert [s.shape for s in leaf.tensor_inputs()] == [(0,), (1,), (2,), (3,)]


def test_single_output_object_is_accepted() -> None:
    leaf = LeafOp.from_json({"op": "x", "outputs": {"shape": [3], "dtype": "int64"}})
    assert leaf.outputs == (omitted((3,), "int64"),)


def test_an_omitted_format_is_a_defaulted_nd_and_null_is_unstated() -> None:
    leaf = LeafOp.from_json({"op": "x", "args": [
        {"shape": [2], "dtype": "int8"}, {"shape": [2], "dtype": "int8", "format": None},
        {"shape": [2], "dtype": "int8", "format": "nd"}]})
    assert [(t.format, t.format_defaulted) for t in leaf.args] == [
        ("ND", True), (None, False), ("ND", False)]
    assert [t.get("format", "omitted") for t in leaf.to_json()["args"]] == [
        "omitted", None, "ND"]
    assert LeafOp.from_json(leaf.to_json()) == leaf
    assert len({leaf.args[0], leaf.args[2]}) == 2  # a defaulted and a stated ND differ


def test_id_is_accepted_and_ignored() -> None:
    assert LeafOp.from_json({**LAYER_NORM, "id": 17}) == LeafOp.from_json(LAYER_NORM)


def test_scalar_tensor_and_values() -> None:
    scalar = TensorSpec((), "float32", values=(0.5,))
    assert scalar.numel == 1 and scalar.rank == 0
    seq = LeafOp.from_json(
        {"op": "x", "args": [{"shape": [4], "dtype": "int32", "values": [812, 1024, 377, 2048]}]}
    ).args[0]
    assert seq.values == (812, 1024, 377, 2048) and seq.numel == 4 and seq.rank == 1
    assert TensorSpec((2, 0, 3), "int8").numel == 0


def test_full_context_round_trips() -> None:
    context = {
        "ep_size": 8,
        "tp_size": 2,
        "phase": "mixed",
        "num_requests": 3,
        "query_lens": [1, 1, 0],
        "kv_lens": [100, 2048, 7],
        "num_devices": 16,
        "topology_tier": "intra_node",
    }
    leaf = LeafOp.from_json({"op": "x", "context": context})
    assert leaf.context.kv_lens == (100, 2048, 7)
    assert leaf.to_json()["context"] == context
    assert LeafOp.from_json(leaf.to_json()) == leaf


# --- validation: every error names its field path --------------------------------------------

BAD_DESCRIPTORS = [
    (("args", 2, 0, "shape"), [16, -3, 4096], "args[2][0].shape: dimension -3 is negative"),
    (("args", 0, "shape"), [2, True], "args[0].shape: dimension True is not an integer"),
    (("args", 0, "shape"), [2, 4.0], "args[0].shape: dimension 4.0 is not an integer"),
    (("args", 0, "shape"), "2,4", "args[0].shape: must be a list"),
    (("outputs", 0, "dtype"), "bf17", "outputs[0].dtype: unknown dtype 'bf17'; known: "),
    (("args", 1, "dtype"), None, "args[1].dtype: missing"),
    (("args", 8, 0, "format"), "", "args[8][0].format: must be a non-empty string"),
    (("args", 3, 0, "strides"), [1], "args[3][0]: unknown tensor key 'strides'"),
    (("args", 4, 0), {"dtype": "int8"}, "args[4][0]: an object argument must be a tensor"),
    (("outputs", 0), None, "outputs[0]: must be a tensor object"),
    (("outputs", 0), [{"shape": [1], "dtype": "int8"}], "outputs[0]: must be a tensor object"),
    (("context", "ep_size"), 0, "context.ep_size: must be a positive integer, got 0"),
    (("context", "tp_size"), -1, "context.tp_size: must be a positive integer, got -1"),
    (("context", "ep_size"), True, "context.ep_size: must be a positive integer, got True"),
    (("context", "num_requests"), 1.5, "context.num_requests: must be a positive integer"),
    (("context", "num_devices"), "8", "context.num_devices: must be a positive integer"),
    (("context", "phase"), "train", "context.phase: must be one of prefill, decode, mixed"),
    (("context", "query_lens"), [1, -2], "context.query_lens[1]: must be a non-negative integer"),
    (("context", "kv_lens"), 5, "context.kv_lens: must be a list of non-negative integers"),
    (("context", "topology_tier"), "", "context.topology_tier: must be a non-empty string"),
    (("context", "epsize"), 16, "context: unknown key 'epsize'"),
    (("context",), [16], "context: must be an object"),
    (("kwargs",), [["a", 1]], "kwargs: must be an object"),
    (("kwargs", "x"), {"shape": [-1], "dtype": "int8"}, "kwargs.x.shape: dimension -1 is negative"),
    (("args",), {"shape": [1], "dtype": "int8"}, "args: must be a list"),
    (("outputs",), "tensor", "outputs: must be a list of tensors"),
    (("op",), "", "op: must be a non-empty string"),
    (("op",), 5, "op: must be a non-empty string"),
    (("op",), None, "op: missing"),
    (("shapes",), [], "descriptor: unknown key 'shapes'"),
]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    BAD_DESCRIPTORS,
    ids=[m.split(":")[0] for *_, m in BAD_DESCRIPTORS],
)
def test_validation_errors_carry_the_field_path(
    path: tuple[Any, ...], value: Any, message: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        LeafOp.from_json(with_changes(DFC_EXAMPLE, path, value))


def test_missing_op() -> None:
    data = {k: v for k, v in DFC_EXAMPLE.items() if k != "op"}
    with pytest.raises(ValueError, match=r"^op: missing$"):
        LeafOp.from_json(data)


def test_values_length_must_match_numel() -> None:
    data = {"op": "x", "args": [{"shape": [2, 2], "dtype": "int32", "values": [1, 2, 3]}]}
    with pytest.raises(ValueError, match=r"^args\[0\]\.values: length 3 != numel 4"):
        LeafOp.from_json(data)
    with pytest.raises(ValueError, match=r"^values: length 0 != numel 1"):
        TensorSpec((), "int32", values=())


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1, "2"], r"^args\[0\]\.values\[1\]: value '2' is not a number"),
        ([1, True], r"^args\[0\]\.values\[1\]: value True is not a number"),
        ([1, [2]], r"^args\[0\]\.values\[1\]: value \[2\] is not a number"),
        ([1, float("nan")], r"^args\[0\]\.values\[1\]: value nan is not finite"),
        (5, r"^args\[0\]\.values: must be a flat list of numbers"),
    ],
)
def test_values_must_be_flat_finite_numbers(values: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeafOp.from_json({"op": "x", "args": [{"shape": [2], "dtype": "int32", "values": values}]})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", r"^descriptor: invalid JSON: "),
        ("[1, 2]", r"^descriptor: must be a JSON object"),
        ('"op"', r"^descriptor: must be a JSON object"),
    ],
)
def test_invalid_json_text(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeafOp.from_json(text)


def test_context_errors_use_field_names() -> None:
    with pytest.raises(ValueError, match=r"^ep_size: must be a positive integer, got 0"):
        LeafContext(ep_size=0)


# --- property: any valid descriptor round-trips --------------------------------------------

_dims = st.lists(st.integers(min_value=0, max_value=4096), max_size=4)
_tensors = st.builds(
    lambda shape, dtype, fmt: {"shape": shape, "dtype": dtype, **({"format": fmt} if fmt else {})},
    _dims,
    st.sampled_from(["bfloat16", "torch.float16", "int8", "int32", "half", "int4"]),
    st.sampled_from([None, "ND", "FRACTAL_NZ", "nc1hwc0"]),
)
_numbers = st.integers(-(2**63 - 1), 2**63 - 1) | st.floats(allow_nan=False)
_scalars = st.none() | st.booleans() | _numbers | st.text(max_size=8)
_args = st.recursive(_tensors | _scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@given(
    args=st.lists(_args, max_size=6),
    kwargs=st.dictionaries(st.text(min_size=1, max_size=6), _args, max_size=3),
    outputs=st.lists(_tensors, max_size=3),
    ep=st.none() | st.integers(min_value=1, max_value=256),
)
def test_round_trip_property(
    args: list[Any], kwargs: dict[str, Any], outputs: list[Any], ep: Any
) -> None:
    data = {"op": "torch.ops.x.y", "args": args, "kwargs": kwargs, "outputs": outputs}
    if ep is not None:
        data["context"] = {"ep_size": ep}
    leaf = LeafOp.from_json(data)
    again = LeafOp.from_json(json.loads(json.dumps(leaf.to_json())))
    assert again == leaf and hash(again) == hash(leaf)
    assert len(leaf.args) == len(args)
