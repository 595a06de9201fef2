"""The summary's table of analytic fallbacks: one row per descriptor a person can tell apart.

Two misses of one op print as different rows only when something a row shows differs —
shapes, dtypes, formats, the miss reason, or the regime fields in which its nearest
measured regime differs; misses that show the same (the same op in two configurations
whose context differs, say) merge, their calls added up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from profstore.tensorcast.run_stats import Fallback

ABBREVIATIONS = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
                 "DT_BF16": "bf16", "FLOAT16": "f16", "FLOAT": "f32"}
"""Short dtype names for the table (JSON keeps the descriptor's own names)."""


@dataclass
class FallbackRow:
    """Fallbacks that show the same, added up."""

    op: str
    reason: str
    label: str
    shapes: str
    dtypes: str
    formats: str
    differs: str
    analytic_us: float
    calls: int
    first: Fallback
    """The first fallback merged into the row (its leaf and its nearest regime)."""

    @property
    def time_us(self) -> float:
        return self.analytic_us * self.calls

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "calls": self.calls, "analytic_us": self.analytic_us,
                "time_us": self.time_us, "reason": self.reason, "tensorcast_label": self.label,
                "shapes": self.shapes, "dtypes": self.dtypes, "formats": self.formats,
                "differing_fields": self.differs, "leaf": self.first.leaf,
                "nearest_us": self.first.nearest_us, "differs": self.first.differs}


def _tensors(value: Any) -> list[dict[str, Any]]:
    """The tensors in an argument list (lists of tensors flattened), in order."""
    if isinstance(value, dict) and "shape" in value:
        return [value]
    if isinstance(value, list):
        return [tensor for item in value for tensor in _tensors(item)]
    return []


def describe(leaf: dict[str, Any]) -> tuple[str, str, str]:
    """Shapes of the arguments; dtypes as ``inputs→outputs``; the stated formats other
    than ND as ``index:format`` (TensorCast's tensors leave theirs unstated: "")."""
    inputs, outputs = _tensors(leaf.get("args", [])), _tensors(leaf.get("outputs", []))
    shapes = ";".join("x".join(map(str, t["shape"])) or "()" for t in inputs)
    names = [ABBREVIATIONS.get(str(t.get("dtype")), str(t.get("dtype")))
             for t in (*inputs, *outputs)]
    dtypes = ",".join(names[:len(inputs)]) + "→" + ",".join(names[len(inputs):])
    formats = ",".join(f"{i}:{t['format']}" for i, t in enumerate((*inputs, *outputs))
                       if t.get("format") not in (None, "ND"))
    return shapes, dtypes, formats


def _differs(item: Fallback) -> str:
    return ", ".join(sorted(item.differs or {}))


def rows(fallbacks: Iterable[Fallback]) -> list[FallbackRow]:
    """The fallbacks as rows, identical ones merged, the most simulated time first."""
    merged: dict[tuple[Any, ...], FallbackRow] = {}
    for item in fallbacks:
        shapes, dtypes, formats = describe(item.leaf)
        key = (item.op, item.reason, item.label, shapes, dtypes, formats, _differs(item),
               item.analytic_us)
        found = merged.get(key)
        if found is None:
            merged[key] = FallbackRow(item.op, item.reason, item.label, shapes, dtypes,
                                      formats, _differs(item), item.analytic_us, item.calls,
                                      item)
        else:
            found.calls += item.calls
    return sorted(merged.values(), key=lambda r: (-r.time_us, r.op, r.shapes, r.dtypes))


def lines(found: list[FallbackRow], total_us: float, top: int) -> list[str]:
    """The table for stderr."""
    if not found:
        return []
    out = [f"  analytic fallbacks, {total_us:.1f} us simulated in all; the most time first:",
           f"    {'OP':<48} {'CALLS':>6} {'TIME_US':>10}  {'REASON':<20} {'SHAPES':<28} "
           f"{'DTYPES':<16} FORMATS / REGIME FIELDS THAT DIFFER"]
    for row in found[:top]:
        extra = "; ".join(part for part in (row.formats, row.differs) if part)
        out.append(f"    {row.op:<48} {row.calls:>6} {row.time_us:>10.1f}  {row.reason:<20} "
                   f"{row.shapes:<28} {row.dtypes:<16} {extra}".rstrip())
    return out
