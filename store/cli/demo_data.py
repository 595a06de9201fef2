"""A small profiling database the project generates itself, for the README's main job.

Latencies come from simple roofline formulas (a launch floor plus bytes over bandwidth
or FLOPs over throughput); they are illustrative, not measurements of any device.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from profstore.ingest.profiling_folders import Row, write_hccl, write_version

DEVICE = "DEMO_A3"
DIRECTORY = "vllm0.18.0_torch2.9.0_cann8.5"
BANDWIDTH_BYTES_PER_US = 1.6e6
FLOPS_PER_US = 3.0e8
HIDDEN = 7168

MAPPING = {
    "version": "0.18.0",
    "device": DEVICE,
    "communication_data_ref": "../../hccl/v8.5/",
    "interpolation_policy": {"kernel_overrides": {"MatMulV2": {"max_interpolation_dim": 2}}},
    "operator_mappings": {
        "tensor_cast.rms_norm.default": {"kernel_type": "RmsNorm"},
        "aten.mm.default": {"kernel_type": "MatMulV2"},
        "aten.add.Tensor": {"kernel_type": "Add", "query_mode": "elementwise"},
        "tensor_cast.dynamic_quantize_symmetric.default": {
            "kernel_type": "DynamicQuant", "compute_subcategory": "compute_scale"},
        "tensor_cast.all_reduce.default": {
            "kernel_type": "hcom_allReduce_", "category": "communication"},
        "aten.view.default": {"zero_cost": True},
    },
}


def _memory_bound(num_bytes: float, floor: float = 4.0) -> float:
    return round(floor + num_bytes / BANDWIDTH_BYTES_PER_US, 6)


def rms_norm_rows() -> Iterator[Row]:
    for tokens in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
        latency = _memory_bound(tokens * HIDDEN * 2 * 2 + HIDDEN * 2)
        yield Row([[tokens, HIDDEN], [HIDDEN]], ["DT_BF16", "DT_BF16"], [[tokens, HIDDEN]],
                  ["DT_BF16"], latency)


def matmul_rows() -> Iterator[Row]:
    for m in (1, 8, 32, 128, 512, 2048):
        for n in (1536, 4096, 7168):
            flops = 2.0 * m * HIDDEN * n
            latency = round(6.0 + flops / FLOPS_PER_US + HIDDEN * n * 2 / BANDWIDTH_BYTES_PER_US, 6)
            yield Row([[m, HIDDEN], [HIDDEN, n]], ["DT_BF16", "DT_BF16"], [[m, n]], ["DT_BF16"],
                      latency, core="AI_CORE")


def add_rows() -> Iterator[Row]:
    for rows in (1, 4, 16, 64, 256, 1024):
        for width in (1024, 4096, 7168):
            latency = _memory_bound(rows * width * 2 * 3)
            yield Row([[rows, width], [rows, width]], ["DT_BF16", "DT_BF16"], [[rows, width]],
                      ["DT_BF16"], latency)


def dynamic_quant_rows() -> Iterator[Row]:
    for m in (1, 16, 128, 1024, 4096):
        for k in (2048, 7168):
            latency = _memory_bound(m * k * 3 + m * 4, floor=5.0)
            yield Row([[m, k]], ["DT_BF16"], [[m, k], [m]], ["INT8", "FLOAT"], latency)


def all_reduce_rows() -> list[list[object]]:
    rows: list[list[object]] = []
    for size in (1024, 65536, 1048576, 16777216):
        latency = round(20.0 + size / 40000.0, 3)
        rows.append([size, 16, "DT_BF16", 1, latency, round(size / latency / 1000, 3)])
    return rows


def write_demo_data(root: Path) -> Path:
    """Write the demo profiling directory under ``root`` and return ``root``."""
    kernels = {
        "RmsNorm": list(rms_norm_rows()),
        "MatMulV2": list(matmul_rows()),
        "Add": list(add_rows()),
        "DynamicQuant": list(dynamic_quant_rows()),
    }
    write_version(root, kernels, MAPPING, directory=DIRECTORY, device=DEVICE)
    write_hccl(root, "hcom_allReduce_", all_reduce_rows(), device=DEVICE)
    return root


DEMO_QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("measured RmsNorm", {
        "op": "tensor_cast.rms_norm.default",
        "args": [{"shape": [64, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [64, HIDDEN], "dtype": "bfloat16"}]}),
    ("interpolated RmsNorm", {
        "op": "tensor_cast.rms_norm.default",
        "args": [{"shape": [100, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [100, HIDDEN], "dtype": "bfloat16"}]}),
    ("interpolated MatMul (M)", {
        "op": "aten.mm.default",
        "args": [{"shape": [200, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN, 4096], "dtype": "bfloat16"}],
        "outputs": [{"shape": [200, 4096], "dtype": "bfloat16"}]}),
    ("interpolated Add (2-D)", {
        "op": "aten.add.Tensor",
        "args": [{"shape": [100, 2048], "dtype": "bfloat16"},
                 {"shape": [100, 2048], "dtype": "bfloat16"}],
        "outputs": [{"shape": [100, 2048], "dtype": "bfloat16"}]}),
    ("out of range RmsNorm", {
        "op": "tensor_cast.rms_norm.default",
        "args": [{"shape": [8192, HIDDEN], "dtype": "bfloat16"},
                 {"shape": [HIDDEN], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [8192, HIDDEN], "dtype": "bfloat16"}]}),
    ("all_reduce 2 MiB on 16 devices", {
        "op": "tensor_cast.all_reduce.default",
        "args": [{"shape": [1024, 1024], "dtype": "bfloat16"}],
        "outputs": [{"shape": [1024, 1024], "dtype": "bfloat16"}],
        "context": {"num_devices": 16}}),
    ("unmapped op", {"op": "aten.nonexistent.default", "args": []}),
]
