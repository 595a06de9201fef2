"""A profiling CSV row as the paths see it: parsed tensors, extra columns, selected latency."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from profstore.model.shapes import FRACTAL_NZ, Shape, logical_shape

__all__ = ["FRACTAL_NZ", "CsvRow", "Slot"]


@dataclass(frozen=True)
class Slot:
    """One tensor position of a kernel: empty slots keep their position with ``shape=None``."""

    shape: Shape | None
    dtype: str
    format: str
    raw_shape: Shape | None = None

    @property
    def present(self) -> bool:
        return self.shape is not None

    @property
    def known_shape(self) -> Shape:
        """The shape of a slot the caller has checked is ``present``."""
        if self.shape is None:
            raise ValueError(f"empty {self.dtype or 'tensor'} slot has no shape")
        return self.shape

    @classmethod
    def from_cells(cls, shape: Shape | None, dtype: str, fmt: str) -> Slot:
        fmt = fmt or "ND"
        logical = None if shape is None else logical_shape(shape, fmt)
        return cls(logical, dtype, fmt, shape)


@dataclass(frozen=True)
class CsvRow:
    kernel_type: str
    inputs: tuple[Slot, ...]
    outputs: tuple[Slot, ...]
    latency_us: float
    latency_column: str
    line_no: int = 0
    extras: Mapping[str, str] = field(default_factory=dict)

    def present_inputs(self) -> tuple[Slot, ...]:
        return self._present_inputs

    def present_outputs(self) -> tuple[Slot, ...]:
        return self._present_outputs

    @cached_property
    def _present_inputs(self) -> tuple[Slot, ...]:
        """Found once per row: several paths and the exact keys ask for it."""
        return _present(self.inputs)

    @cached_property
    def _present_outputs(self) -> tuple[Slot, ...]:
        return _present(self.outputs)

    def extra(self, column: str) -> str | None:
        """The stripped text of an extra column; None when the column is absent."""
        value = self.extras.get(column)
        return None if value is None else value.strip()

    def has_column(self, column: str) -> bool:
        return column in self.extras


def _present(slots: tuple[Slot, ...]) -> tuple[Slot, ...]:
    return tuple(s for s in slots if s.shape is not None)
