"""Read one HCCL communication CSV (message_bytes, num_devices, dtype, topology_tier,
Duration(us), bandwidth_gbps)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from profstore.ingest.csvfile import (
    LineReader,
    RejectCode,
    Rejected,
    file_refusal,
    header_columns,
    mark_truncated,
    refuse_file,
    split_cells,
    split_text,
)
from profstore.storage.schema import SQL_INT_MAX

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


def is_comm_csv(raw: bytes) -> bool:
    """Whether a CSV is a communication table (its header names ``message_bytes``,
    ``num_devices`` and ``Duration(us)``). The older layout keeps such files inside a
    vLLM version directory, beside the kernel CSVs, with no ``communication_data_ref``."""
    first = raw.lstrip(b"\r\n").split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    return set(REQUIRED) <= set(header_columns(first))


def read_comm_csv(raw: bytes) -> CommReadout:
    """Same line rules as kernel CSVs: rows read = accepted + rejected, blank lines skipped."""
    readout = CommReadout()
    split = split_text(raw)
    if split.header is None:
        return readout
    columns = header_columns(split.header[1])
    refusal = file_refusal(split.header, split, columns, REQUIRED)
    if refusal is not None:
        return refuse_file(readout, refusal)
    readout.columns = columns
    last = split.lines[-1][0] if split.lines else None
    reader = LineReader()
    for line_no, text in split.lines:
        cells = split_cells(line_no, text, columns, reader)
        outcome = cells if isinstance(cells, Rejected) else _comm_row(line_no, text, cells)
        if not split.complete and line_no == last:
            outcome = mark_truncated(outcome)
        if isinstance(outcome, Rejected):
            readout.rejected.append(outcome)
        else:
            readout.accepted.append(outcome)
    return readout


def _comm_row(line_no: int, text: str, cells: Mapping[str, str]) -> CommRow | Rejected:
    def bad(code: RejectCode, message: str) -> Rejected:
        return Rejected(line_no, text, code, message)

    size = _number(cells["message_bytes"])
    if size is None or size <= 0:
        return bad(RejectCode.FIELD_INVALID, f"message_bytes {cells['message_bytes']!r} invalid")
    devices = _number(cells["num_devices"])
    if devices is None or not 0 < devices <= SQL_INT_MAX or devices != int(devices):
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
