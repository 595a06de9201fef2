"""Evaluation fixtures shared across test folders: the small hand-computable RmsNorm
versions (``write_rms`` with ``LINEAR`` or ``SQUARE``) and the replay trace."""

from __future__ import annotations

from pathlib import Path

from tests.support.perfdb import Row, mapping_doc, write_version

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


RMS_OP = "tensor_cast.rms_norm.default"
HIDDEN = 7168


def rms_row(tokens: int, latency: float) -> Row:
    return Row([[tokens, HIDDEN], [HIDDEN]], ["DT_BF16", "DT_BF16"], [[tokens, HIDDEN]],
               ["DT_BF16"], latency)


def write_rms(root: Path, points: list[tuple[int, float]], **mapping: dict) -> Path:
    """One RmsNorm regime (hidden 7168) with the given (tokens, latency) rows; ``mapping``
    adds entries to the op mapping (op → entry)."""
    entries = {RMS_OP: {"kernel_type": "RmsNorm"}, **mapping}
    policy = {"interpolation_policy": {"kernel_overrides": {"RmsNorm": {
        "max_interpolation_dim": 1}}}}
    return write_version(root, {"RmsNorm": [rms_row(x, y) for x, y in points]},
                         mapping_doc(entries, **policy))


LINEAR = [(10 * x, 2.0 * x + 3.0) for x in (1, 2, 3, 4, 5)]
"""tokens = 10x, latency = 2x + 3: linear interpolation reproduces every interior point.
(Tokens start at 10: a leading 1 would be stripped as a batch dimension.)"""

SQUARE = [(10, 1.0), (20, 4.0), (30, 8.0), (30, 10.0), (40, 16.0), (50, 25.0)]
"""tokens = 10x, latency = x², with x = 3 measured twice (8 and 10, median 9): hiding
tokens 30 must hide both rows."""

UNVERIFIED = {"tensor_cast.dynamic_quantize_mxfp4.default": {
    "kernel_type": "DynamicBlockQuant", "compute_subcategory": "compute_scale"}}
"""A mapped path whose kernel has no CSV: the report's unverified scope must list it."""
