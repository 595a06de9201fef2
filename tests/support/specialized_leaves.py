"""Leaves of the specialised paths, as the end-to-end corpus tests build them."""

from __future__ import annotations

from profstore.model.leaf import LeafOp


def dfc(tokens: int, suffix: str = "_quant", weight: str = "int8", ep: int = 16) -> LeafOp:
    gmm1 = [{"shape": [16, 7168, 4096], "dtype": weight, "format": "FRACTAL_NZ"}]
    gmm2 = [{"shape": [16, 2048, 7168], "dtype": weight, "format": "FRACTAL_NZ"}]
    x = {"shape": [tokens, 7168], "dtype": "bfloat16"}
    idx = {"shape": [tokens, 8], "dtype": "int32"}
    if suffix == "":
        args = [x, idx, gmm1, [None], gmm2, [None], 0, list(range(ep))]
    else:
        args = [x, idx, gmm1, [None], [None], [None], "bfloat16", gmm2, [None], [None], [None],
                "bfloat16", 0, list(range(ep))]
    return LeafOp.from_json({"op": f"tensor_cast.dispatch_ffn_combine{suffix}.default",
                             "args": args, "context": {"ep_size": ep},
                             "outputs": [{"shape": [tokens, 7168], "dtype": "bfloat16"}]})



def add(tokens: int, dtype: str = "bfloat16") -> LeafOp:
    return LeafOp.from_json({"op": "aten.add.Tensor", "args": [
        {"shape": [1, tokens, 7168], "dtype": dtype}, {"shape": [tokens, 7168], "dtype": dtype}],
        "outputs": [{"shape": [1, tokens, 7168], "dtype": dtype}]})



def mla(tokens: int, cache: int = 226048, index: list[int] | None = None) -> LeafOp:
    return LeafOp.from_json({"op": "tensor_cast.scatter_nd_update_mla.default", "args": [
        {"shape": [tokens, 128], "dtype": "bfloat16"}, {"shape": [cache, 128], "dtype": "bfloat16"},
        {"shape": index or [tokens, 1], "dtype": "int32"}, 128, None],
        "outputs": [{"shape": [cache, 128], "dtype": "bfloat16"}]})


LI_OP = "tensor_cast.quant_lightning_indexer.default"


SFA_OP = "tensor_cast.sparse_attn_sharedkv.default"


def li_leaf(tokens: int, *, heads: int = 32, requests: int = 1, phase: str = "prefill",
            blocks: int = 1766, kv: list[int] | None = None) -> LeafOp:
    seq = {"shape": [requests], "dtype": "int32"}
    context = {"phase": phase, **({"kv_lens": kv} if kv else {})}
    return LeafOp.from_json({
        "op": LI_OP,
        "args": [{"shape": [1, tokens, heads, 128], "dtype": "bfloat16"},
                 {"shape": [tokens, heads], "dtype": "bfloat16"},
                 {"shape": [blocks, 128, 1, 128], "dtype": "bfloat16"}, 2048, 1, seq, seq],
        "outputs": [{"shape": [1, tokens, 2048], "dtype": "int32"}], "context": context})


def sfa_leaf(tokens: int, *, heads: int = 16, context: dict | None = None) -> LeafOp:
    return LeafOp.from_json({
        "op": SFA_OP,
        "args": [{"shape": [1, tokens, heads, 512], "dtype": "bfloat16"},
                 {"shape": [1766, 128, 1, 512], "dtype": "bfloat16"},
                 {"shape": [heads], "dtype": "float32"},
                 {"shape": [1, tokens, 1, 2048], "dtype": "int32"}, 0.04, 512, None],
        "outputs": [{"shape": [1, tokens, heads, 512], "dtype": "bfloat16"}],
        "context": {"num_requests": 1, "phase": "prefill"} if context is None else context})


SQL = "tensor_cast.static_quant_linear.default"


SYM = "tensor_cast.dynamic_quantize_symmetric.default"


def linear(op: str, m: int, k: int, n: int, dtype: str, out_dtype: str) -> LeafOp:
    """A matmul leaf; the quantized ops also pass their scale (``x, weight, scale``)."""
    scale = [] if op.startswith("aten.") else [{"shape": [n], "dtype": "bfloat16"}]
    return LeafOp.from_json({
        "op": op,
        "args": [{"shape": [m, k], "dtype": dtype}, {"shape": [k, n], "dtype": dtype}, *scale],
        "outputs": [{"shape": [m, n], "dtype": out_dtype}],
    })


def quantize(m: int, k: int, dtype: str = "bfloat16", scale: list[int] | None = None,
             op: str = SYM) -> LeafOp:
    return LeafOp.from_json({
        "op": op, "args": [{"shape": [m, k], "dtype": dtype}, [-1], "float32", "int8"],
        "outputs": [{"shape": [m, k], "dtype": "int8"},
                    {"shape": [m] if scale is None else scale, "dtype": "float32"}],
    })
