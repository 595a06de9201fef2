"""Phase 1 generic compute on a hand-computable fixture: exact, 1-D, range, switch."""

from __future__ import annotations

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.perfdb import Row, build_store, mapping_doc, write_version

OP = "tensor_cast.rms_norm.default"


def rms_row(tokens: int, latency: float) -> Row:
    return Row([[tokens, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[tokens, 7168]], ["DT_BF16"],
               latency)


def leaf(tokens: int, dtype: str = "bfloat16") -> LeafOp:
    return LeafOp.from_json({
        "op": OP,
        "args": [{"shape": [tokens, 7168], "dtype": dtype}, {"shape": [7168], "dtype": dtype},
                 1e-6],
        "outputs": [{"shape": [tokens, 7168], "dtype": dtype}],
    })


@pytest.fixture()
def store(tmp_path):
    rows = [rms_row(8, 10.0), rms_row(16, 14.0), rms_row(64, 30.0), rms_row(64, 34.0)]
    write_version(tmp_path / "data", {"RmsNorm": rows},
                  mapping_doc({OP: {"kernel_type": "RmsNorm"}}))
    with build_store(tmp_path) as s:
        yield s


def test_exact_hit_is_measured_with_provenance(store):
    result = store.lookup(leaf(16), "v0.18")
    assert result.latency_us == 14.0
    assert result.source is QuerySource.MEASURED
    assert result.details["method"] == "base_exact"
    assert result.details["matched_rows"][0]["line"] == 3


def test_duplicate_coordinate_takes_the_median(store):
    result = store.lookup(leaf(64), "v0.18")
    assert result.latency_us == 32.0
    assert result.details["duplicates"] == {"count": 2, "min": 30.0, "max": 34.0,
                                            "aggregation": "median"}


def test_float16_reads_as_bf16(store):
    assert store.lookup(leaf(16, "float16"), "v0.18").latency_us == 14.0


def test_linear_1d_between_neighbours(store):
    result = store.lookup(leaf(12), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(12.0)
    assert result.details["method"] == "linear_1d"
    assert [r["axes"] for r in result.details["matched_rows"]] == [[8.0], [16.0]]


def test_interpolation_uses_the_median_of_duplicates(store):
    # between 16 (14.0) and 64 (median 32.0): 40 → 14 + 18 * 24/48 = 23.0
    assert store.lookup(leaf(40), "v0.18").latency_us == pytest.approx(23.0)


def test_outside_range_is_a_miss(store):
    result = store.lookup(leaf(128), "v0.18")
    assert result.latency_us is None
    assert result.reason is Reason.OUTSIDE_RANGE


def test_disable_switch_returns_the_base_result(store):
    result = store.lookup(leaf(12), "v0.18", interpolation=False)
    assert result.latency_us is None
    assert result.reason is Reason.NO_EXACT_MATCH


def test_unmapped_and_unknown_version(store):
    other = LeafOp.from_json({"op": "aten.nothing.default", "args": []})
    assert store.lookup(other, "v0.18").reason is Reason.UNMAPPED
    assert store.lookup(leaf(16), "v9.9").reason is Reason.UNKNOWN_VERSION


def test_a_one_token_row_stays_on_the_token_axis(tmp_path):
    """[1, 7168] is one token row, not a batch: it anchors the low end of the axis."""
    rows = [rms_row(1, 6.0), rms_row(8, 13.0)]
    write_version(tmp_path / "data", {"RmsNorm": rows},
                  mapping_doc({OP: {"kernel_type": "RmsNorm"}}))
    with build_store(tmp_path) as store:
        result = store.lookup(leaf(4), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(9.0)
    assert [r["axes"] for r in result.details["matched_rows"]] == [[1.0], [8.0]]
