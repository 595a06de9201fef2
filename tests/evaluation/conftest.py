"""The small hand-computable fixture databases of the evaluation tests (the ingested corpus,
``perfdb_store``, is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from profstore.api import Store

from tests.support.perfdb import Row, build_database, build_store, mapping_doc, write_version

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


@pytest.fixture()
def linear_store(tmp_path: Path) -> Iterator[Store]:
    write_rms(tmp_path / "data", LINEAR)
    with build_store(tmp_path) as store:
        yield store


@pytest.fixture()
def square_db(tmp_path: Path) -> str:
    write_rms(tmp_path / "data", SQUARE, **UNVERIFIED)
    return build_database(tmp_path)


@pytest.fixture()
def square_store(square_db: Path) -> Iterator[Store]:
    with Store.open(square_db) as store:
        yield store
