"""Run TensorCast's own model runner (msmodeling 84fec85, unmodified) with a given data
source and record every lookup: its command-line parser, ``UserInputConfig``,
``ModelRunner`` and ``run_inference``, as ``msmodeling inference text-generate`` does."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.paths import PERFDB, SHARED
from tests.support.prerequisites import require

TENSOR_CAST = SHARED / "third_party" / "msmodeling-84fec85"
V18_DIR = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / "vllm0.18.0_torch2.9.0_cann8.5"
DEVICE = "ATLAS_800_A3_752T_128G_DIE"
RUNTIME_PACKAGES = ("torch", "transformers", "diffusers", "aenum", "optree", "overrides",
                    "pandas")
COMMUNICATION = ("tensor_cast.all_reduce.default", "tensor_cast.all_gather.default",
                 "tensor_cast.all_to_all.default", "tensor_cast.reduce_scatter.default")


def require_tensor_cast() -> None:
    """TensorCast's export and its runtime packages (``.[tensorcast]``) on the path."""
    require(TENSOR_CAST.is_dir(), f"the TensorCast export at {TENSOR_CAST}")
    for name in RUNTIME_PACKAGES:
        require(importlib.util.find_spec(name) is not None,
                f"{name} (pip install -e '.[tensorcast]')")
    os.environ["HF_HUB_OFFLINE"] = "1"
    if str(TENSOR_CAST) not in sys.path:
        sys.path.append(str(TENSOR_CAST))


def copy_model(name: str, root: Path) -> Path:
    """A config of the export's tests/assets/model_config, copied under ``root`` (0755).

    TensorCast refuses a model-config path through a symbolic link or a group- or
    world-writable folder, so a test never hands it the export's own copy: ``../shared``
    may be reached through a link, or laid with other modes."""
    target = root / name
    shutil.copytree(TENSOR_CAST / "tests" / "assets" / "model_config" / name, target)
    for path in (root, target):
        path.chmod(0o755)
    return target


@dataclass
class Call:
    """One lookup of the run: the op, its tensor shapes, the answer or the miss reason."""

    func: str
    shapes: list[tuple[int, ...]]
    latency_us: float | None
    source: str | None
    reason: str | None
    method: str | None
    kernel_shapes: str | None
    rule: str | None
    result: Any = None


@dataclass
class Simulation:
    step_s: float
    calls: list[Call]
    op_records: list[Any] = field(default_factory=list)
    data_source: Any = None

    def outcomes(self) -> dict[str, int]:
        """Hits by source, misses by reason."""
        counts: dict[str, int] = {}
        for call in self.calls:
            key = call.source or f"miss:{call.reason}"
            counts[key] = counts.get(key, 0) + 1
        return counts


class Recorder:
    """Stands between the empirical model and a data source, recording every answer."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def lookup(self, op_invoke_info: Any) -> Any:
        result = self.inner.lookup(op_invoke_info)
        stats = result.shape_debug_statistics() if result is not None else {}
        self.calls.append(Call(
            str(op_invoke_info.func),
            [tuple(a.shape) for a in op_invoke_info.args if hasattr(a, "shape")],
            None if result is None else float(result.latency_us),
            None if result is None else result.source.name,
            getattr(self.inner, "last_miss_reason", None) if result is None else None,
            None if result is None else result.details.get("method"),
            stats.get("kernel_shapes"), stats.get("shape_match_rule"), result))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def simulate(model: str, options: list[str], config_root: Path,
             data_source: Callable[[Any], Any] | None = None) -> Simulation:
    """One decode step of ``model`` (a config of the export's tests/assets) on the v0.18
    version directory; ``data_source(parallel_config)`` replaces upstream's source."""
    from cli.inference.text_generate import arg_parse
    from tensor_cast.core.input_generator import generate_inputs
    from tensor_cast.core.model_runner import ModelRunner
    from tensor_cast.core.user_config import UserInputConfig

    config = config_root / model
    if not config.is_dir():
        copy_model(model, config_root)
    args = arg_parse([str(config), "--num-queries", "16", "--query-length", "1",
                      "--context-length", "4096", "--decode", "--device", DEVICE,
                      "--performance-model", "profiling", "--profiling-database-path",
                      str(V18_DIR), *options])
    user_input = UserInputConfig.from_args(args)
    runner = ModelRunner(user_input)
    (model_pm,) = runner.perf_models
    if data_source is not None:
        model_pm.data_source = data_source(user_input.get_parallel_config())
    inner = model_pm.data_source
    recorder = Recorder(inner)
    model_pm.data_source = recorder
    metrics = runner.run_inference(generate_inputs_func=generate_inputs)
    return Simulation(metrics.execution_time_s["empirical"], recorder.calls,
                      model_pm.op_records, inner)
