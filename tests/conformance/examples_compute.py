"""Examples of the compute paths: generic, matmul, elementwise, quantized_matmul,
compute_scale, moe_fused and scatter_nd_update_mla (layouts as in
tests/paths/test_<path module>.py)."""

from __future__ import annotations

from typing import Any

from profstore.model.result import Reason

from tests.conformance.model import BaseAnswers, Lands, Miss, Mutation, PathExample, Probe
from tests.support.perfdb import Row

BF16, FP32, NZ = "DT_BF16", "FLOAT", "FRACTAL_NZ"
REGIME_MISMATCH = Miss(Reason.REGIME_MISMATCH)


def tensor(shape: list[int], dtype: str = "bfloat16", fmt: str = "ND",
           **more: Any) -> dict[str, Any]:
    """A descriptor tensor that states its memory format (ND unless told), so an example
    tests the path's extraction, not the resolution of unstated formats."""
    return {"shape": shape, "dtype": dtype, "format": fmt, **more}


# ---- generic: RmsNorm, axis_0 = tokens ------------------------------------------------

RMS_OP = "tensor_cast.rms_norm.default"


def rms_row(tokens: int, latency: float, dtype: str = BF16, hidden: int = 7168) -> Row:
    return Row([[tokens, hidden], [hidden]], [dtype, dtype], [[tokens, hidden]], [dtype], latency)


def rms_leaf(tokens: int) -> dict[str, Any]:
    return {"op": RMS_OP, "args": [tensor([tokens, 7168]), tensor([7168]), 1e-6],
            "outputs": [tensor([tokens, 7168])]}


GENERIC = PathExample(
    path="generic", kernel="RmsNorm", entries={RMS_OP: {"kernel_type": "RmsNorm"}},
    rows=(rms_row(8, 10.0), rms_row(16, 14.0)), foreign=(rms_row(16, 31.0, FP32),),
    leaf=rms_leaf(16), hit=1,
    probe=Probe(rms_leaf(12), 12.0, "linear_1d"),  # 10 + (14 - 10) * 4/8
    mutations=(
        Mutation("dtype", ("dtypes",), ((("args", 0, "dtype"), "float32"),
                                        (("args", 1, "dtype"), "float32"),
                                        (("outputs", 0, "dtype"), "float32")), Lands(0)),
        Mutation("hidden_size", ("shape_signature",), ((("args", 0, "shape"), [16, 4096]),
                                                       (("args", 1, "shape"), [4096])),
                 REGIME_MISMATCH),
    ))

# ---- matmul: MatMulV2, M/K/N ---------------------------------------------------------

MM_OP = "aten.mm.default"


def mm_row(m: int, latency: float) -> Row:
    return Row([[m, 1024], [1024, 512]], [BF16, BF16], [[m, 512]], [BF16], latency,
               core="AI_CORE")


def mm_leaf(m: int) -> dict[str, Any]:
    return {"op": MM_OP, "args": [tensor([m, 1024]), tensor([1024, 512])],
            "outputs": [tensor([m, 512])]}


MATMUL = PathExample(
    path="matmul", kernel="MatMulV2", entries={MM_OP: {"kernel_type": "MatMulV2"}},
    rows=(mm_row(16, 4.0), mm_row(32, 6.0)), leaf=mm_leaf(32), hit=1,
    probe=Probe(mm_leaf(24), 5.0, "linear_1d"),  # halfway between M 16 and 32
    mutations=(
        Mutation("weight_dtype", ("dtypes", "weight_dtype"),
                 ((("args", 1, "dtype"), "float32"),), REGIME_MISMATCH),
        Mutation("input_count", ("input_count",),
                 ((("args", 2), tensor([512])),), REGIME_MISMATCH),
        Mutation("output_dtype", ("output_dtype",),
                 ((("outputs", 0, "dtype"), "float32"),), BaseAnswers()),
    ))

# ---- elementwise: Add, output [T, H] ---------------------------------------------------

ADD_OP = "aten.add.Tensor"


def add_row(second: list[int], latency: float, dtype: str = BF16) -> Row:
    return Row([[16, 1024], second], [dtype, dtype], [[16, 1024]], [dtype], latency)


ADD_LEAF = {"op": ADD_OP, "args": [tensor([16, 1024]), tensor([16, 1024])],
            "outputs": [tensor([16, 1024])]}

ELEMENTWISE = PathExample(
    path="elementwise", kernel="Add",
    entries={ADD_OP: {"kernel_type": "Add", "query_mode": "elementwise"}},
    rows=(add_row([16, 1024], 7.5),), foreign=(add_row([16, 1024], 11.0, FP32),),
    leaf=ADD_LEAF, hit=0,
    mutations=(
        Mutation("output_dtype", ("output_dtype",), ((("outputs", 0, "dtype"), "float32"),),
                 Lands(0)),
        Mutation("broadcast", ("broadcast_pattern",), ((("args", 1, "shape"), [16, 1]),),
                 REGIME_MISMATCH),
    ))

# ---- quantized_matmul: QuantBatchMatmulV3, INT8 FRACTAL_NZ weight ----------------------

QUANT_OP, FP8_OP = "tensor_cast.static_quant_linear.default", "tensor_cast.fp8_linear.default"
QUANT_ENTRY = {"kernel_type": "QuantBatchMatmulV3", "tc_input_count": 2,
               "compute_subcategory": "quantized_matmul",
               "expected_input_formats": ["ND", "FRACTAL_NZ"]}


def qbmm_row(m: int, latency: float) -> Row:
    """Weight (K=1024, N=512) stored raw as the device does, (N/32, K/16, 16, 32)."""
    return Row([[m, 1024], [16, 64, 16, 32], [512], [m]], ["INT8", "INT8", BF16, FP32],
               [[m, 512]], [BF16], latency, formats=["ND", "FRACTAL_NZ", "ND", "ND"],
               core="MIX_AIC")


QUANT_LEAF = {"op": QUANT_OP, "args": [tensor([32, 1024], "int8"),
                                       tensor([16, 64, 16, 32], "int8", fmt=NZ),
                                       tensor([512]), tensor([32], "float32")],
              "outputs": [tensor([32, 512], "float16")]}

QUANTIZED_MATMUL = PathExample(
    path="quantized_matmul", kernel="QuantBatchMatmulV3",
    entries={QUANT_OP: QUANT_ENTRY, FP8_OP: QUANT_ENTRY},
    rows=(qbmm_row(32, 5.5),), leaf=QUANT_LEAF, hit=0,
    mutations=(
        Mutation("quant_subtype", ("quant_subtype",), ((("op",), FP8_OP),), REGIME_MISMATCH),
        Mutation("output_dtype", ("output_dtype", "output_signature"),
                 ((("outputs", 0, "dtype"), "float32"),), REGIME_MISMATCH),
    ))

# ---- compute_scale: DynamicQuant per-token -------------------------------------------

DQ_OP = "tensor_cast.dynamic_quantize_symmetric.default"


def dq_row(scale: list[int], latency: float, dtype: str = BF16) -> Row:
    return Row([[16, 1024]], [dtype], [[16, 1024], scale], ["INT8", FP32], latency)


DQ_LEAF = {"op": DQ_OP, "args": [tensor([16, 1024]), [-1], "float32", "int8"],
           "outputs": [tensor([16, 1024], "int8"), tensor([16], "float32")]}

COMPUTE_SCALE = PathExample(
    path="compute_scale", kernel="DynamicQuant",
    entries={DQ_OP: {"kernel_type": "DynamicQuant", "compute_subcategory": "compute_scale",
                     "tc_input_count": 1}},
    rows=(dq_row([16], 3.0),), foreign=(dq_row([], 70.0),), leaf=DQ_LEAF, hit=0,
    mutations=(
        Mutation("scale_mode", ("scale_mode",), ((("outputs", 1, "shape"), []),), Lands(0)),
        Mutation("activation_dtype", ("activation_dtype",),
                 ((("args", 0, "dtype"), "float16"),), REGIME_MISMATCH),
    ))

# ---- moe_fused: DispatchFFNCombine W8A8, EP 16 ------------------------------------------

DFC_OP, DFC_FP8_OP = ("tensor_cast.dispatch_ffn_combine_quant.default",
                      "tensor_cast.dispatch_ffn_combine_fp8.default")
HIDDEN, EXPERTS, INTER = 7168, 16, 4096


def dfc_row(tokens: int, latency: float, ep: int = 16) -> Row:
    """CSV inputs: x, GMM1 weight, GMM2 weight, expert indices, scales, probabilities."""
    inputs = [[tokens, HIDDEN], [EXPERTS, HIDDEN, INTER], [EXPERTS, INTER // 2, HIDDEN],
              [tokens, 8], [EXPERTS * INTER], [EXPERTS * HIDDEN], [tokens, 8]]
    dtypes = [BF16, "INT8", "INT8", "INT32", "INT64", "INT64", FP32]
    formats = ["ND", "FRACTAL_NZ", "FRACTAL_NZ", "ND", "ND", "ND", "ND"]
    return Row(inputs, dtypes, [[tokens, HIDDEN], [EXPERTS]], [BF16, "INT64"], latency,
               formats=formats, extra={"EP Size": ep}, core="MIX_AIC")


def dfc_leaf(tokens: int) -> dict[str, Any]:
    """dispatch_ffn_combine_quant(x, expert_indices, gmm1_w, …, gmm2_w (arg 7), …)."""
    scale = [tensor([EXPERTS, INTER], "float32")]
    args = [tensor([tokens, HIDDEN]), tensor([tokens, 8], "int32"),
            [tensor([EXPERTS, HIDDEN, INTER], "int8", fmt=NZ)], scale, [None], [None],
            "bfloat16", [tensor([EXPERTS, INTER // 2, HIDDEN], "int8", fmt=NZ)], scale, [None],
            [None], "bfloat16", 0, list(range(16))]
    return {"op": DFC_OP, "args": args, "outputs": [tensor([tokens, HIDDEN])],
            "context": {"ep_size": 16}}


MOE_FUSED = PathExample(
    path="moe_fused", kernel="DispatchFFNCombine",
    entries={op: {"kernel_type": "DispatchFFNCombine", "query_mode": "moe_fused"}
             for op in (DFC_OP, DFC_FP8_OP)},
    rows=(dfc_row(16, 120.0), dfc_row(64, 200.0)), foreign=(dfc_row(16, 400.0, ep=32),),
    leaf=dfc_leaf(16), hit=0,
    mutations=(
        Mutation("ep_size", ("ep_size",), ((("context", "ep_size"), 32),), Lands(0)),
        Mutation("topk", ("topk",), ((("args", 1, "shape"), [16, 6]),), REGIME_MISMATCH),
        Mutation("quant_subtype", ("quant_subtype",), ((("op",), DFC_FP8_OP),),
                 REGIME_MISMATCH),
    ))

# ---- scatter_nd_update_mla: ScatterNdUpdate, CSV order (cache, index, update) -----------

MLA_OP = "tensor_cast.scatter_nd_update_mla.default"


def mla_row(tokens: int, latency: float, cache: int = 4096) -> Row:
    return Row([[cache, 128], [tokens, 1], [tokens, 128]], [BF16, "INT32", BF16],
               [[cache, 128]], [BF16], latency)


def mla_leaf(tokens: int) -> dict[str, Any]:
    """TensorCast order: (update, kv_cache, slot_mapping, window_size, seq_lens)."""
    return {"op": MLA_OP, "args": [tensor([tokens, 128]), tensor([4096, 128]),
                                   tensor([tokens, 1], "int32"), 128,
                                   tensor([2], "int32", values=[3, 5])],
            "outputs": [tensor([4096, 128])]}


SCATTER_ND_UPDATE_MLA = PathExample(
    path="scatter_nd_update_mla", kernel="ScatterNdUpdate",
    entries={MLA_OP: {"kernel_type": "ScatterNdUpdate", "query_mode": "scatter_nd_update_mla"}},
    rows=(mla_row(2, 5.0), mla_row(8, 8.0)), foreign=(mla_row(8, 50.0, cache=8192),),
    leaf=mla_leaf(8), hit=1,
    probe=Probe(mla_leaf(4), 6.0, "linear_1d"),  # 5 + (8 - 5) * 2/6
    mutations=(
        Mutation("cache_shape", ("cache_shape",), ((("args", 1, "shape"), [8192, 128]),
                                                   (("outputs", 0, "shape"), [8192, 128])),
                 Lands(0)),
        Mutation("index_dtype", ("dtypes",), ((("args", 2, "dtype"), "int64"),),
                 REGIME_MISMATCH),
        Mutation("update_tail", ("update_tail",), ((("args", 0, "shape"), [8, 64]),),
                 REGIME_MISMATCH),
    ))

COMPUTE_EXAMPLES = (GENERIC, MATMUL, ELEMENTWISE, QUANTIZED_MATMUL, COMPUTE_SCALE, MOE_FUSED,
                    SCATTER_ND_UPDATE_MLA)
