"""Write profiling directories in the real on-disk format (kernel CSVs, op_mapping.yaml,
HCCL CSVs). Used by the demo data generator and by tests that need exact fixtures."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEVICE = "TEST_DEVICE"
V18_DIR = "vllm0.18.0_torch2.9.0_cann8.5"
BASE_HEADER = [
    "OP State", "Accelerator Core", "Input Shapes", "Input Data Types", "Input Formats",
    "Output Shapes", "Output Data Types", "Output Formats",
]


def shape_cell(shapes: Sequence[Sequence[int] | None]) -> str:
    """``[[64, 7168], None, [8]]`` → the profiler's cell text ``"64,7168;;8"``."""
    return ";".join("" if s is None else (",".join(map(str, s)) if s else "()") for s in shapes)


@dataclass
class Row:
    """One kernel CSV row. ``latency`` goes to ``Average Duration(us)`` unless ``columns``
    says otherwise; ``extra`` adds columns such as ``EP Size`` or ``Runtime phase``."""

    inputs: Sequence[Sequence[int] | None]
    dtypes: Sequence[str]
    outputs: Sequence[Sequence[int] | None]
    out_dtypes: Sequence[str]
    latency: float | str | None = None
    formats: Sequence[str] | None = None
    out_formats: Sequence[str] | None = None
    columns: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    core: str = "AI_VECTOR_CORE"

    def cells(self) -> dict[str, str]:
        cells = {
            "OP State": "dynamic",
            "Accelerator Core": self.core,
            "Input Shapes": shape_cell(self.inputs),
            "Input Data Types": ";".join(self.dtypes),
            "Input Formats": ";".join(self.formats or ["ND"] * len(self.dtypes)),
            "Output Shapes": shape_cell(self.outputs),
            "Output Data Types": ";".join(self.out_dtypes),
            "Output Formats": ";".join(self.out_formats or ["ND"] * len(self.out_dtypes)),
        }
        if self.latency is not None:
            cells["Average Duration(us)"] = str(self.latency)
        cells.update({k: "" if v is None else str(v) for k, v in self.columns.items()})
        cells.update({k: "" if v is None else str(v) for k, v in self.extra.items()})
        return cells


def csv_text(rows: Iterable[Row], header: Sequence[str] | None = None) -> str:
    """A kernel CSV in the v0.18 layout (CRLF, literal quotes around shape cells)."""
    rows = list(rows)
    cells = [r.cells() for r in rows]
    if header is None:
        header = list(BASE_HEADER)
        for c in cells:
            header += [k for k in c if k not in header]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    for c in cells:
        row = [c.get(h, "") for h in header]
        for i, h in enumerate(header):
            if h in ("Input Shapes", "Output Shapes"):
                row[i] = f'"{row[i]}"'
        writer.writerow(row)
    return out.getvalue()


def write_version(root: Path, kernels: Mapping[str, Iterable[Row] | str],
                  mapping: Mapping[str, Any] | str | None = None,
                  directory: str = V18_DIR, device: str = DEVICE) -> Path:
    """Write ``<root>/<device>/vllm_ascend/<directory>/`` with one CSV per kernel and an
    ``op_mapping.yaml`` (a dict with ``operator_mappings`` and policies, or raw text)."""
    version = root / device / "vllm_ascend" / directory
    version.mkdir(parents=True, exist_ok=True)
    for kernel, rows in kernels.items():
        text = rows if isinstance(rows, str) else csv_text(rows)
        (version / f"{kernel}.csv").write_bytes(text.encode())
    if mapping is not None:
        text = mapping if isinstance(mapping, str) else yaml.safe_dump(dict(mapping))
        (version / "op_mapping.yaml").write_text(text)
    return version


def write_hccl(root: Path, collective: str, rows: Sequence[Sequence[Any]],
               version: str = "v8.5", device: str = DEVICE) -> Path:
    folder = root / device / "hccl" / version
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["message_bytes,num_devices,dtype,topology_tier,Duration(us),bandwidth_gbps"]
    lines += [",".join(str(v) for v in r) for r in rows]
    (folder / f"{collective}.csv").write_text("\n".join(lines) + "\n")
    return folder


def mapping_doc(entries: Mapping[str, Mapping[str, Any]], **policies: Any) -> dict[str, Any]:
    """An op_mapping document: ``policies`` go in as top-level blocks, e.g.
    ``interpolation_policy={"kernel_overrides": {...}}``."""
    return {"version": "0.18.0", "device": DEVICE, **policies,
            "operator_mappings": {op: dict(e) for op, e in entries.items()}}
