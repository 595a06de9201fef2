"""ProfstoreDataSource with real torch tensors (``meta`` and CPU), when torch is installed."""

from __future__ import annotations

import importlib.util

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.result import QuerySource
from profstore.model.tensor_spec import TensorSpec
from profstore.tensorcast import ProfstoreDataSource, leaf_from_invocation
from profstore.tensorcast.convert import invocation_shapes
from profstore.tensorcast.tensorcast_result import simulation_shapes

from tests.support.markers import requires_perfdb
from tests.support.prerequisites import require
from tests.support.torch_fakes import CASES, CONTEXT, EXPECTED, FakeOp, mm, with_aliases

require(importlib.util.find_spec("torch") is not None,
        "torch (pip install -e '.[tensorcast]'; ./dev.sh installs it)")
import torch  # noqa: E402 - only once the prerequisite check passed


class TorchFactory:
    """Builds the shared cases with torch: ``meta`` tensors, or CPU tensors when the case
    gives data; formats live in a side table read through the ``format_of`` hook."""

    def __init__(self) -> None:
        self.formats: dict[int, str] = {}

    def tensor(self, shape, dtype, fmt=None, data=None):
        kind = getattr(torch, dtype)
        if data is None:
            made = torch.empty(shape, dtype=kind, device="meta")
        else:
            made = torch.tensor(data, dtype=kind).reshape(shape)
        if fmt is not None:
            self.formats[id(made)] = fmt
        return made

    def format_of(self, tensor) -> str | None:
        return self.formats.get(id(tensor))


def dtype(name: str):
    return getattr(torch, name)


@pytest.mark.parametrize("build", CASES, ids=lambda f: f.__name__)
def test_conversion_of_torch_tensors_is_exact(build):
    factory = TorchFactory()
    op = build(factory.tensor, dtype)
    assert leaf_from_invocation(op, CONTEXT, factory.format_of) == EXPECTED[build]


@pytest.mark.parametrize("build", CASES, ids=lambda f: f.__name__)
def test_invocation_shapes_of_torch_tensors_are_the_leafs_simulation_shapes(build):
    op = build(TorchFactory().tensor, dtype)
    assert invocation_shapes(op) == simulation_shapes(EXPECTED[build])


def test_torch_scalars_and_objects():
    x = torch.empty(4, 8, dtype=torch.float16, device="meta")
    op = FakeOp(torch.ops.aten.full.default, ([4, 8], 0.0),
                {"dtype": torch.bfloat16, "layout": torch.strided,
                 "device": torch.device("meta"), "pin_memory": False,
                 "is_decode_values": torch.tensor([True, True])}, x)
    assert leaf_from_invocation(op) == LeafOp(
        "aten.full.default", args=((4, 8), 0.0),
        kwargs={"dtype": "bfloat16", "layout": "torch.strided", "device": "meta",
                "pin_memory": False},
        outputs=(TensorSpec((4, 8), "float16"),), context=LeafContext(phase="decode"))


def test_meta_integer_tensors_carry_no_values():
    op = FakeOp("x.default", (torch.empty(3, dtype=torch.int32, device="meta"),
                              torch.tensor([[1, 2], [3, 4]], dtype=torch.int64)))
    assert [a.values for a in leaf_from_invocation(op).args] == [None, (1, 2, 3, 4)]


def test_a_tensor_met_again_is_the_spec_converted_before_unless_it_carries_values():
    weight = torch.empty(7168, 4096, dtype=torch.bfloat16, device="meta")
    first = leaf_from_invocation(FakeOp("x.default", (weight,))).arg(0)
    again = leaf_from_invocation(FakeOp(
        "y.default", (torch.empty(7168, 4096, dtype=torch.bfloat16, device="meta"),))).arg(0)
    assert first is again and again == TensorSpec((7168, 4096), "bfloat16")
    nz = leaf_from_invocation(FakeOp("x.default", (weight,)), format_of=lambda t: "fractal_nz")
    assert nz.arg(0) == TensorSpec((7168, 4096), "bfloat16", "FRACTAL_NZ")  # format in the key
    lengths = [leaf_from_invocation(FakeOp("x.default", (torch.tensor(v),))).arg(0).values
               for v in ([3, 5], [7, 9])]
    assert lengths == [(3, 5), (7, 9)]  # same shape and dtype, other values: read each time


@requires_perfdb
def test_real_aten_mm_on_meta_tensors_hits_like_a_direct_lookup(perfdb_store):
    factory = TorchFactory()
    op = mm(factory.tensor, dtype)
    op.func = torch.ops.aten.mm.default
    source = ProfstoreDataSource(perfdb_store, "v0.18", ep_size=16, tp_size=1)
    result = source.lookup(op)
    direct = perfdb_store.lookup(EXPECTED[mm], "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.as_dict() == with_aliases(direct)
