"""Fake TensorCast/torch objects and the adapter cases several test folders use."""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, field
from typing import Any

from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.result import QueryResult
from profstore.model.tensor_spec import TensorSpec
from profstore.tensorcast.aliases import with_upstream_aliases

from tests.support.paths import PERFDB


def with_aliases(direct: QueryResult) -> dict[str, Any]:
    """What the adapter returns for ``direct``: the same answer, upstream's key aliases added."""
    return {**direct.as_dict(), "details": with_upstream_aliases(direct.details)}



V18 = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / "vllm0.18.0_torch2.9.0_cann8.5"



CONTEXT = LeafContext(ep_size=16, tp_size=1)



class TorchDtype:
    """Stands for ``torch.dtype``: ``str()`` gives ``torch.<name>``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


TorchDtype.__name__ = "dtype"



@dataclass
class Overload:
    name: str

    def __str__(self) -> str:
        return self.name



@dataclass
class FakeTensor:
    shape: tuple[int, ...]
    dtype: Any
    format: Any = None
    data: Any = None
    device: str = "cpu"

    def tolist(self) -> Any:
        if self.data is None:
            raise RuntimeError("no data behind this tensor")
        return self.data



@dataclass
class FakeOp:
    func: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    out: Any = None



class SymbolicShapeTensor:
    """A tensor whose shape cannot be read (as a symbolic shape raises)."""

    dtype = "bfloat16"

    @property
    def shape(self):
        raise RuntimeError("symbolic shape")



def fake_tensor(shape, dtype, fmt=None, data=None):
    return FakeTensor(tuple(shape), TorchDtype(dtype), fmt, data)



def spec(shape, dtype, fmt=None, values=None):
    return TensorSpec(tuple(shape), dtype, fmt, values)



def dfc_quant(t, d):
    e = 16
    return FakeOp(Overload("tensor_cast.dispatch_ffn_combine_quant.default"), (
        t((64, 7168), "bfloat16"), t((64, 8), "int32"),
        [t((7168, 4096), "int8", "FRACTAL_NZ") for _ in range(e)],
        [t((4096,), "float32") for _ in range(e)], [None], [None], d("bfloat16"),
        [t((2048, 7168), "int8", "FRACTAL_NZ") for _ in range(e)],
        [t((7168,), "float32") for _ in range(e)], [None], [None], d("bfloat16"),
        0, list(range(e))), {}, t((64, 7168), "bfloat16"))



def scatter_mla(t, d):
    return FakeOp(Overload("tensor_cast.scatter_nd_update_mla.default"), (
        t((8, 128), "bfloat16"), t((226048, 128), "bfloat16"),
        t((8, 1), "int32", data=[[i] for i in range(8)]), 128,
        t((8,), "int32", data=[300 + i for i in range(8)])), {}, t((226048, 128), "bfloat16"))



def lightning_indexer(t, d):
    return FakeOp(Overload("tensor_cast.quant_lightning_indexer.default"), (
        t((1, 1, 32, 128), "bfloat16"), t((1, 1, 32), "bfloat16"),
        t((1766, 128, 1, 128), "bfloat16"), 2048, 1,
        t((1,), "int32", data=[256]), t((1,), "int32", data=[1])),
        {"is_decode_values": [True]}, t((1, 1, 2048), "int32"))



def dynamic_quant(t, d):
    return FakeOp(Overload("tensor_cast.dynamic_quantize_symmetric.default"), (
        t((2, 7168), "bfloat16"), [-1], d("float32"), d("int8")), {},
        (t((2, 7168), "int8"), t((2, 1), "float32")))



def mm(t, d):
    return FakeOp(Overload("aten.mm.default"),
                  (t((1, 1536), "bfloat16"), t((1536, 3072), "bfloat16")), {},
                  t((1, 3072), "bfloat16"))



EXPECTED = {
    dfc_quant: LeafOp("tensor_cast.dispatch_ffn_combine_quant.default", args=(
        spec((64, 7168), "bfloat16"), spec((64, 8), "int32"),
        (spec((7168, 4096), "int8", "FRACTAL_NZ"),) * 16, (spec((4096,), "float32"),) * 16,
        (None,), (None,), "bfloat16",
        (spec((2048, 7168), "int8", "FRACTAL_NZ"),) * 16, (spec((7168,), "float32"),) * 16,
        (None,), (None,), "bfloat16", 0, tuple(range(16))),
        outputs=(spec((64, 7168), "bfloat16"),), context=CONTEXT),
    scatter_mla: LeafOp("tensor_cast.scatter_nd_update_mla.default", args=(
        spec((8, 128), "bfloat16"), spec((226048, 128), "bfloat16"),
        spec((8, 1), "int32", values=tuple(range(8))), 128,
        spec((8,), "int32", values=tuple(range(300, 308)))),
        outputs=(spec((226048, 128), "bfloat16"),), context=CONTEXT),
    lightning_indexer: LeafOp("tensor_cast.quant_lightning_indexer.default", args=(
        spec((1, 1, 32, 128), "bfloat16"), spec((1, 1, 32), "bfloat16"),
        spec((1766, 128, 1, 128), "bfloat16"), 2048, 1,
        spec((1,), "int32", values=(256,)), spec((1,), "int32", values=(1,))),
        outputs=(spec((1, 1, 2048), "int32"),),
        context=LeafContext(ep_size=16, tp_size=1, phase="decode")),
    dynamic_quant: LeafOp("tensor_cast.dynamic_quantize_symmetric.default", args=(
        spec((2, 7168), "bfloat16"), (-1,), "float32", "int8"),
        outputs=(spec((2, 7168), "int8"), spec((2, 1), "float32")), context=CONTEXT),
    mm: LeafOp("aten.mm.default", args=(spec((1, 1536), "bfloat16"),
                                        spec((1536, 3072), "bfloat16")),
               outputs=(spec((1, 3072), "bfloat16"),), context=CONTEXT),
}



CASES = list(EXPECTED)



def csv_latency(kernel: str, **cells: str) -> float:
    """Median ``Average Duration(us)`` of the v0.18 rows whose cells read ``cells``
    (``Input_Shapes="1,1536"`` matches the column ``Input Shapes``)."""
    wanted = {name.replace("_", " "): text for name, text in cells.items()}
    with (V18 / f"{kernel}.csv").open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle)
                if all(r[name].strip('"') == text for name, text in wanted.items())]
    return statistics.median(float(r["Average Duration(us)"]) for r in rows)

