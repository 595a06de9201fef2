"""The generic compute path (store/paths/generic.py).

Phase 1 generic compute on a hand-computable fixture: exact, 1-D, range, switch; then the
``output_numel`` regime of gather-like kernels (GatherV2/V3/V2AiCore, Index, ConcatD):
what moves with the output size is free, the rest fixed. Values from the corpus CSVs."""

from __future__ import annotations

import csv

import pytest
from profstore.evaluation.holdout import run_holdout
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason
from profstore.paths.generic import generic_extraction

from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.perfdb import Row, build_database, build_store, mapping_doc, write_version
from tests.support.stores import opened_store

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
def store_db(tmp_path):
    rows = [rms_row(8, 10.0), rms_row(16, 14.0), rms_row(64, 30.0), rms_row(64, 34.0)]
    write_version(tmp_path / "data", {"RmsNorm": rows},
                  mapping_doc({OP: {"kernel_type": "RmsNorm"}}))
    return build_database(tmp_path)


store = opened_store("store_db")


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


# ---- the output_numel regime of gather-like kernels, on the corpus ----------------------

VERSIONS = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend"
V15 = VERSIONS / "vllm0.15.0_torch2.9.0_cann8.5"
TABLE = [16160, 7168]


def signature(shapes, dtypes, output, kernel="GatherV2"):
    found = generic_extraction(kernel, shapes, dtypes, [output], "output_numel")
    return found.regime["shape_signature"], found.axes


def test_an_embedding_lookup_frees_the_index_length_and_keeps_the_table():
    dtypes = ["DT_BF16", "INT64", "INT64"]
    one = signature([(16160, 7168), (1, 1), (1,)], dtypes, (1, 1, 7168))
    many = signature([(16160, 7168), (1, 3072), (1,)], dtypes, (1, 3072, 7168))
    assert one == ("16160,7168;i2;i1->r3:7168", (7168.0,))
    assert many == ("16160,7168;i2;i1->r3:7168", (3072.0 * 7168,))
    other_table = signature([(9496, 5120), (1, 8), (1,)], dtypes, (1, 8, 5120))
    assert other_table[0] == "9496,5120;i2;i1->r3:5120"


def test_index_and_concat_rows_that_move_with_the_output_share_one_regime():
    index = ["DT_BF16", "INT64", "INT64", "INT64"]
    assert signature([(1, 7168), (1,), (1,), (1,)], index, (1, 7168), "Index")[0] == \
        signature([(144, 7168), (1,), (144,), (1,)], index, (144, 7168), "Index")[0] == \
        "T,7168;i1;i1;i1->r2:7168"
    # Index's other family selects T rows out of 8T (v0.18 Index.csv: 448,7168;1;56;1 -> 56,7168)
    assert signature([(8, 7168), (1,), (1,), (1,)], index, (1, 7168), "Index")[0] == \
        signature([(448, 7168), (1,), (56,), (1,)], index, (56, 7168), "Index")[0] == \
        "8T,7168;i1;i1;i1->r2:7168"
    concat = ["DT_BF16", "DT_BF16"]
    assert signature([(16, 16, 128), (16, 16, 64)], concat, (16, 16, 192))[0] == \
        signature([(1024, 16, 128), (1024, 16, 64)], concat, (1024, 16, 192))[0] == \
        "T,16,128;T,16,64->r3:192"


def embedding(tokens: int, table=TABLE) -> LeafOp:
    return LeafOp.from_json({"op": "aten.embedding.default", "args": [
        {"shape": table, "dtype": "bfloat16"}, {"shape": [1, tokens], "dtype": "int64"}],
        "outputs": [{"shape": [1, tokens, table[1]], "dtype": "bfloat16"}]})


@requires_perfdb
def test_an_unmeasured_embedding_size_interpolates(perfdb_store):
    # v0.18 GatherV2.csv, table 16160 x 7168, Average Duration(us): 4 tokens (line 5)
    # 5.849212, 8 tokens (line 7) 5.957555 (6 tokens has no Average value, only profiling
    # columns). 5 tokens: 5.849212 + (5.957555 - 5.849212) / 4 = 5.87629775
    result = perfdb_store.lookup(embedding(5), "v0.18")
    assert (result.source, result.details["method"]) == (QuerySource.INTERPOLATED, "linear_1d")
    assert result.latency_us == pytest.approx(5.87629775)
    assert [r["line"] for r in result.details["matched_rows"]] == [5, 7]


@requires_perfdb
def test_a_held_out_embedding_point_interpolates(perfdb_store):
    # holding out 4 tokens (5.849212): the neighbours in the same column are 3 tokens
    # (line 4, 6.187588) and 8 tokens (5.957555): 6.187588 - 0.230033 / 5 = 6.1415814
    report = run_holdout(perfdb_store, "v0.18", kernel="GatherV2")
    point = next(p for p in report.points if p.axes == [4.0 * 7168]
                 and p.regime_key.find('"16160,7168;i2;i1->r3:7168"') > 0)
    assert (point.truth_us, point.method) == (pytest.approx(5.849212), "linear_1d")
    assert point.predicted_us == pytest.approx(6.1415814)


@requires_perfdb
def test_v015_gather_points_fall_in_one_regime_per_table(perfdb_store):
    with open(V15 / "GatherV2.csv", newline="") as handle:
        tables = {row["Input Shapes"].strip('"').split(";")[0] for row in csv.DictReader(handle)}
    profile = perfdb_store.profile("v0.15")
    points, regimes = perfdb_store.queries.regime_stats(profile.id, "GatherV2", "generic")
    # each row is read with its 3 inputs and with the first 2 and 1 (the tc_input_count of
    # aten.embedding / aten.gather and of aten.index.Tensor, which also reach GatherV2):
    # 25 rows -> 75 points; before, 55 regimes
    assert (points, regimes) == (75, 3 * len(tables))
