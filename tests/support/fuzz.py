"""Seed leaves the fuzz tests mutate."""

from __future__ import annotations

MM = {
    "op": "aten.mm.default",
    "args": [{"shape": [200, 7168], "dtype": "bfloat16"},
             {"shape": [7168, 4096], "dtype": "bfloat16"}],
    "outputs": [{"shape": [200, 4096], "dtype": "bfloat16"}],
}



RMS = {
    "op": "tensor_cast.rms_norm.default",
    "args": [{"shape": [12, 7168], "dtype": "bfloat16"}, {"shape": [7168], "dtype": "bfloat16"},
             1e-6],
    "outputs": [{"shape": [12, 7168], "dtype": "bfloat16"}],
}



DISPATCH = {
    "op": "tensor_cast.dispatch_ffn_combine.default",
    "args": [{"shape": [2, 4, 72, 7168], "dtype": "bfloat16"},
             {"shape": [576, 8], "dtype": "int32"},
             [{"shape": [16, 7168, 4096], "dtype": "int8", "format": "FRACTAL_NZ"}], [None],
             "bfloat16", 0, [0, 1, 2, 3]],
    "kwargs": {"topk": 8},
    "outputs": [{"shape": [576, 8, 7168], "dtype": "bfloat16"}],
    "context": {"ep_size": 16, "tp_size": 1, "phase": "decode", "query_lens": [1, 1],
                "kv_lens": [4096, 128]},
}



SEEDS = [MM, RMS, DISPATCH]

