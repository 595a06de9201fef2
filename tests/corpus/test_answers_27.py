"""Answers that regressed or were never right (v0.13 concat along rows, a JSON descriptor that
omits its formats, a one-element scale at M = 1), on the real corpus. Every expected value
is read from the CSV named beside it and combined by hand."""

from __future__ import annotations

import pytest
from profstore.evaluation.holdout import run_holdout
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.markers import requires_perfdb

pytestmark = requires_perfdb

ROWS = '"C,7168;C,7168->r2:7168"'


def concat(rows: int, width: int = 7168) -> LeafOp:
    block = {"shape": [rows, width], "dtype": "bfloat16"}
    return LeafOp.from_json({"op": "aten.cat.default", "args": [[block, block], 0],
                             "outputs": [{"shape": [2 * rows, width], "dtype": "bfloat16"}]})


def test_v013_concat_along_rows_interpolates_on_the_output_size(perfdb_store):
    # v0.13 ConcatD.csv, Average Duration(us): line 15 "1024,7168;1024,7168" -> 2048 x 7168
    # = 14,680,064 elements, 54.896; line 16 "8192,7168;8192,7168" -> 16384 x 7168 =
    # 117,440,512 elements, 398.534. 2 x [2730, 7168] -> 5460 x 7168 = 39,137,280 elements:
    # 54.896 + (398.534 - 54.896) * (39,137,280 - 14,680,064) / (117,440,512 - 14,680,064)
    expected = 54.896 + (398.534 - 54.896) * 24_457_216 / 102_760_448
    result = perfdb_store.lookup(concat(2730), "v0.13")
    assert (result.source, result.details["method"]) == (QuerySource.INTERPOLATED, "linear_1d")
    assert result.latency_us == pytest.approx(expected)
    assert result.latency_us == pytest.approx(136.6826110)
    assert [r["line"] for r in result.details["matched_rows"]] == [15, 16]
    assert result.details["target_regime"]["shape_signature"] == "C,7168;C,7168->r2:7168"


def test_a_held_out_v013_row_concat_point_interpolates(perfdb_store):
    # holding out line 15 (2048 x 7168, 54.896): neighbours line 14 (256 x 7168 = 1,835,008
    # elements, 14.21) and line 16 (117,440,512, 398.534); 14,680,064 - 1,835,008 is one
    # ninth of 117,440,512 - 1,835,008: 14.21 + (398.534 - 14.21) / 9 = 56.912666...
    report = run_holdout(perfdb_store, "v0.13", kernel="ConcatD")
    point = next(p for p in report.points if p.axes == [2048.0 * 7168] and ROWS in p.regime_key)
    assert (point.truth_us, point.method) == (pytest.approx(54.896), "linear_1d")
    assert point.predicted_us == pytest.approx(14.21 + (398.534 - 14.21) / 9)


def test_a_held_out_v018_last_dim_concat_point_interpolates(perfdb_store):
    # v0.18 ConcatD.csv has no Average Duration; Profiling Average Duration(us): line 3
    # "16,16,128;16,16,64" (49,152 output elements) 5.915836, line 4 (128 tokens, 393,216)
    # 7.258882, line 5 (1024 tokens, 3,145,728) 15.788086. Holding out line 4:
    # 5.915836 + (15.788086 - 5.915836) * (393,216 - 49,152) / (3,145,728 - 49,152) = 1/9
    report = run_holdout(perfdb_store, "v0.18", kernel="ConcatD")
    point = next(p for p in report.points if p.axes == [393216.0])
    assert point.regime_key.find('"T,16,128;T,16,64->r3:192"') > 0
    assert (point.truth_us, point.method) == (pytest.approx(7.258882), "linear_1d")
    assert point.predicted_us == pytest.approx(5.915836 + (15.788086 - 5.915836) / 9)


def test_v018_concat_of_one_token_joins_its_family(perfdb_store):
    # v0.18 line 2 "1,16,128;1,16,64" (3,072 elements, 5.790629) and line 3 (16 tokens,
    # 49,152, 5.915836): 8 tokens = 24,576 elements, (24,576 - 3,072) / (49,152 - 3,072)
    # = 21,504 / 46,080 = 7 / 15 of the way. Before, the leading 1 read as a batch and the
    # one-token row stood in a regime of its own (the target missed).
    leaf = LeafOp.from_json({"op": "aten.cat.default", "args": [
        [{"shape": [8, 16, 128], "dtype": "bfloat16"},
         {"shape": [8, 16, 64], "dtype": "bfloat16"}], -1],
        "outputs": [{"shape": [8, 16, 192], "dtype": "bfloat16"}]})
    result = perfdb_store.lookup(leaf, "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(5.790629 + (5.915836 - 5.790629) * 7 / 15)
    assert [r["line"] for r in result.details["matched_rows"]] == [2, 3]


def mm(weight_format: dict[str, object]) -> LeafOp:
    return LeafOp.from_json({"op": "aten.mm.default", "args": [
        {"shape": [431, 7168], "dtype": "bfloat16"},
        {"shape": [7168, 2112], "dtype": "bfloat16", **weight_format}],
        "outputs": [{"shape": [431, 2112], "dtype": "bfloat16"}]})


# v0.18 MatMulV2.csv, K 7168 x N 2112, Average Duration(us), M 384 and 512 (431 is 47/128
# of the way): ND weight "2112,7168" lines 1660 (85.344431) and 1672 (82.894991);
# FRACTAL_NZ weight "448,132,16,16" lines 338 (79.837388) and 339 (79.702370).
ND_431 = 85.344431 + (82.894991 - 85.344431) * 47 / 128
NZ_431 = 79.837388 + (79.702370 - 79.837388) * 47 / 128


def test_an_omitted_format_is_nd(perfdb_store):
    # DESIGN §3: a descriptor's format defaults to ND. Before, the omitted format read as
    # unstated and the lookup missed with format_ambiguous (84.45 us vs 79.79 us).
    omitted = perfdb_store.lookup(mm({}), "v0.18")
    stated = perfdb_store.lookup(mm({"format": "ND"}), "v0.18")
    assert omitted.source is QuerySource.INTERPOLATED
    assert omitted.latency_us == stated.latency_us == pytest.approx(ND_431)
    assert [r["line"] for r in omitted.details["matched_rows"]] == [1660, 1672]
    assert omitted.details["format_source"] == "default"
    assert omitted.details["format_sources"]["args[1]"] == "default"
    assert stated.details["format_source"] == "default"  # the activation's is still omitted


def test_a_null_format_or_the_infer_policy_asks_for_the_unstated_resolution(perfdb_store):
    unstated = perfdb_store.lookup(mm({"format": None}), "v0.18")
    inferred = perfdb_store.lookup(mm({}), "v0.18", format_policy={"default": "infer"})
    for result in (unstated, inferred):
        assert result.reason is Reason.FORMAT_AMBIGUOUS
        message = result.details["attempted_kernels"][0]["message"]
        assert "args[1]=ND: 84.45 us" in message and "args[1]=FRACTAL_NZ: 79.79 us" in message


def test_a_policy_restates_an_omitted_format(perfdb_store):
    nz = perfdb_store.lookup(mm({}), "v0.18",
                             format_policy={"ops": {"aten.mm.default": {"1": "FRACTAL_NZ"}}})
    assert nz.latency_us == pytest.approx(NZ_431)
    assert [r["line"] for r in nz.details["matched_rows"]] == [338, 339]
    assert nz.details["format_sources"]["args[1]"] == "policy"


def quant(m: int, scale: list[int]) -> LeafOp:
    return LeafOp.from_json({
        "op": "tensor_cast.dynamic_quantize_symmetric.default",
        "args": [{"shape": [m, 2304], "dtype": "bfloat16"}, [-1], "float32", "int8"],
        "outputs": [{"shape": [m, 2304], "dtype": "int8"}, {"shape": scale, "dtype": "float32"}]})


@pytest.mark.parametrize("scale", [[1, 1], [1], []])
def test_a_one_element_scale_at_m1_is_per_token(perfdb_store, scale):
    # v0.18 DynamicQuant.csv, per-token rows of one 2304-wide token: line 882 "1,2304" ->
    # "1,2304;1" 5.397532 and line 196 "1,1,2304" -> "1,1,2304;1,1" 5.561852 (one
    # coordinate, M = 1, K = 2304): their median (5.397532 + 5.561852) / 2 = 5.479692.
    # Before, a (1, 1) scale read per_tensor and missed with degenerate_candidates.
    result = perfdb_store.lookup(quant(1, scale), "v0.18")
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == pytest.approx((5.397532 + 5.561852) / 2)
    assert result.details["scale_mode"] == "per_token"
    assert sorted(r["line"] for r in result.details["matched_rows"]) == [196, 882]
