"""Read one HCCL communication CSV (message_bytes, num_devices, dtype, topology_tier,
Duration(us), bandwidth_gbps)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ingest.csvfile import (
    LFS_MARKER,
    LFS_MESSAGE,
    RejectCode,
    Rejected,
    data_lines,
    refuse_file,
    split_cells,
)

REQUIRED = ("message_bytes", "num_devices", "Duration(us)")


@dataclass(frozen=True)
class CommRow:
    line_no: int
    raw_text: str
    message_bytes: float
    num_devices: int
    dtype: str | None
    topology_tier: str | None
    latency_us: float
    bandwidth_gbps: float | None


@dataclass
class CommReadout:
    columns: tuple[str, ...] = ()
    accepted: list[CommRow] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    refusal: str | None = None

    @property
    def rows_read(self) -> int:
        return len(self.accepted) + len(self.rejected)


def read_comm_csv(raw: bytes) -> CommReadout:
    readout = CommReadout()
    split = data_lines(raw)
    if isinstance(split, Rejected):
        readout.refusal = split.reason
        readout.rejected.append(split)
        return readout
    header_text, lines = split
    if header_text is None:
        return readout
    if header_text.startswith(LFS_MARKER):
        refuse_file(readout, [(1, header_text), *lines], RejectCode.LFS_POINTER, LFS_MESSAGE)
        return readout
    columns = tuple(c.strip() for c in header_text.split(","))
    readout.columns = columns
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        refuse_file(readout, lines, RejectCode.MISSING_COLUMNS,
                    f"file lacks required columns {missing}")
        return readout
    for line_no, text in lines:
        cells = split_cells(line_no, text, columns)
        outcome = cells if isinstance(cells, Rejected) else _comm_row(line_no, text, cells)
        (readout.rejected if isinstance(outcome, Rejected) else readout.accepted).append(outcome)
    return readout


def _comm_row(line_no: int, text: str, cells: Mapping[str, str]) -> CommRow | Rejected:
    def bad(code: RejectCode, message: str) -> Rejected:
        return Rejected(line_no, text, code, message)

    size = _number(cells["message_bytes"])
    if size is None or size <= 0:
        return bad(RejectCode.FIELD_INVALID, f"message_bytes {cells['message_bytes']!r} invalid")
    devices = _number(cells["num_devices"])
    if devices is None or devices <= 0 or devices != int(devices):
        return bad(RejectCode.FIELD_INVALID, f"num_devices {cells['num_devices']!r} invalid")
    latency = _number(cells["Duration(us)"])
    if latency is None or latency <= 0:
        return bad(RejectCode.LATENCY_INVALID,
                   f"no finite positive latency: Duration(us)={cells['Duration(us)']!r}")
    tier = (cells.get("topology_tier") or "").strip() or None
    dtype = (cells.get("dtype") or "").strip() or None
    return CommRow(line_no, text, size, int(devices), dtype, tier, latency,
                   _number(cells.get("bandwidth_gbps", "")))


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None
