"""FRACTAL_NZ on both sides: a leaf that states a tensor as FRACTAL_NZ (raw device shape, as
the CSV records it) meets the row that records the same tensor, in the same regime and at
the same coordinate. The row side restores every FRACTAL_NZ slot to its logical shape at
parse time (``profstore.model.csv_row.Slot.from_cells``); the target side must do the same.

Each case is its path's conformance example with one tensor in FRACTAL_NZ on both sides.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.conformance.examples_compute import (
    BF16,
    ELEMENTWISE,
    GENERIC,
    MATMUL,
    NZ,
    SCATTER_ND_UPDATE_MLA,
    tensor,
)
from tests.conformance.model import PathExample, mutated
from tests.conformance.sides import matching, row_side, signature, target_extraction
from tests.support.perfdb import Row

RMS_X = [1, 448, 16, 16]      # logical (16, 7168)
MM_WEIGHT = [64, 32, 16, 16]  # logical (1024, 512)
MLA_CACHE = [256, 8, 16, 16]  # logical (4096, 128)
ADD_X = [64, 1, 16, 16]       # logical (1024, 16)


def nz(shape: list[int]) -> dict[str, Any]:
    return tensor(shape, fmt=NZ)


CASES = [
    pytest.param(GENERIC, Row([RMS_X, [7168]], [BF16, BF16], [[16, 7168]], [BF16], 14.0,
                              formats=[NZ, "ND"]),
                 ((("args", 0), nz(RMS_X)),), id="generic"),
    pytest.param(MATMUL, Row([[32, 1024], MM_WEIGHT], [BF16, BF16], [[32, 512]], [BF16], 6.0,
                             formats=["ND", NZ], core="AI_CORE"),
                 ((("args", 1), nz(MM_WEIGHT)),), id="matmul"),
    pytest.param(SCATTER_ND_UPDATE_MLA,
                 Row([MLA_CACHE, [8, 1], [8, 128]], [BF16, "INT32", BF16], [[4096, 128]],
                     [BF16], 8.0, formats=[NZ, "ND", "ND"]),
                 ((("args", 1), nz(MLA_CACHE)),), id="scatter_nd_update_mla"),
    pytest.param(ELEMENTWISE,
                 Row([ADD_X, ADD_X], [BF16, BF16], [ADD_X], [BF16], 7.5, formats=[NZ, NZ],
                     out_formats=[NZ]),
                 ((("args", 0), nz(ADD_X)), (("args", 1), nz(ADD_X)),
                  (("outputs", 0), nz(ADD_X))),
                 id="elementwise"),
]


@pytest.mark.no_database
@pytest.mark.parametrize(("example", "row", "edits"), CASES)
def test_a_fractal_nz_leaf_meets_its_fractal_nz_row(example: PathExample, row: Row, edits):
    nz_example = replace(example, rows=(row,), foreign=(), hit=0)
    target = target_extraction(nz_example, mutated(example.leaf, edits))
    found = matching(row_side(nz_example, nz_example.hit_line), target)
    assert signature(found) == signature(target)
