"""The ``output_numel`` regime of gather-like kernels (GatherV2/V3/V2AiCore, Index, ConcatD):
what moves with the output size is free, the rest fixed. Values from the corpus CSVs."""

from __future__ import annotations

import csv

import pytest
from profstore.evaluation.holdout import run_holdout
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource
from profstore.paths.generic import generic_extraction

from tests.conftest import PERFDB, requires_perfdb

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
