"""Evaluation fixtures shared across test folders: the replay trace."""

from __future__ import annotations

RMS = "tensor_cast.rms_norm.default"



def rms_variant(tokens: int, dtypes: bool = True) -> dict:
    dtype = ["float16"] if dtypes else []
    return {"input_shapes": [f"({tokens}, 7168)", "(7168)"], "input_dtypes": dtype * 2,
            "output_shapes": [f"({tokens}, 7168)"], "output_dtypes": dtype}



TRACE = {
    "model": "fixture", "scenario": "decode", "total_ops": 9,
    "ops": [
        {"op_name": RMS, "count": 5,
         "shape_variants": [rms_variant(20), rms_variant(25, dtypes=False), rms_variant(100)]},
        {"op_name": "aten.nothing.default", "count": 4,
         "shape_variants": [{"input_shapes": ["(3, 4)"], "input_dtypes": ["float16"],
                             "output_shapes": ["(3, 4)"], "output_dtypes": ["float16"]}]},
    ],
}
"""Against the linear fixture (tokens 10·x → 2x + 3 us): tokens 20 is measured (7.0),
25 interpolates to 8.0, 100 is out of range; the second op is not in the mapping."""

