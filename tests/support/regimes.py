"""DynamicQuant leaves the regime tests share (TensorCast's per-tensor symmetric quantize)."""

from __future__ import annotations

import json

from profstore.model.leaf import LeafOp

SYM = "tensor_cast.dynamic_quantize_symmetric.default"



def per_tensor(m: int, k: int, dtype: str = "float16") -> LeafOp:
    """TensorCast's per-tensor call: ``dims=[]``, a scalar float32 scale."""
    return LeafOp.from_json({
        "op": SYM, "args": [{"shape": [m, k], "dtype": dtype}, [], "float32", "int8"],
        "outputs": [{"shape": [m, k], "dtype": "int8"}, {"shape": [], "dtype": "float32"}]})


LEAF = json.dumps({
    "op": SYM, "args": [{"shape": [12, 2048], "dtype": "float16"}, [], "float32", "int8"],
    "outputs": [{"shape": [12, 2048], "dtype": "int8"}, {"shape": [], "dtype": "float32"}]})
