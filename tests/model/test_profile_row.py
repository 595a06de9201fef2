"""``CsvRow``: its present slots, found once per row, on a value that stays frozen."""

from __future__ import annotations

import dataclasses

import pytest
from profstore.model.profile_row import CsvRow, Slot

QUERY = Slot.from_cells((2, 4, 16, 16), "DT_BF16", "FRACTAL_NZ")
EMPTY = Slot(None, "", "")
SCALE = Slot((8,), "FLOAT", "ND")


def row() -> CsvRow:
    return CsvRow("MatMulV2", (QUERY, EMPTY, SCALE), (EMPTY, SCALE), 12.5, "Duration(us)")


def test_present_slots_skip_the_empty_ones_in_order() -> None:
    found = row()
    # FRACTAL_NZ (H, W, bh, bw) = (2, 4, 16, 16) is logical (H·bw, W·bh) = (32, 64)
    assert found.present_inputs() == (Slot((32, 64), "DT_BF16", "FRACTAL_NZ", (2, 4, 16, 16)),
                                       Slot((8,), "FLOAT", "ND"))
    assert found.present_outputs() == (Slot((8,), "FLOAT", "ND"),)


def test_present_slots_are_found_once_and_the_row_stays_a_frozen_value() -> None:
    found = row()
    assert found.present_inputs() is found.present_inputs()
    assert found.present_outputs() is found.present_outputs()
    assert found == row() and repr(found) == repr(row())
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.latency_us = 1.0  # type: ignore[misc]
