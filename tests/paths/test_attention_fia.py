"""Phase 1 attention (attention_special, FusedInferAttentionScore) on hand-computable fixtures.

Decode regime (TND, 4 heads, 1 KV head, head_dim 128, BF16), latencies planar in
(√seq, batch): f = 10 + (√seq − 16)·10/16 + (batch − 1)·10, measured at √seq 16, 32, 64
(seq 256, 1024, 4096) for batch 1 and at √seq 16, 32 for batch 3.
"""

from __future__ import annotations

import csv
import math
import shutil
import sqlite3

import pytest
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason
from profstore.paths.attention_fia import FusedInferAttentionPath
from profstore.paths.base import TargetContext

from tests.support.fia import (
    KERNEL,
    OP,
    attention,
    decode,
    decode_row,
    fia_row,
    make_db,
    make_store,
    runtime,
    unstated,
)
from tests.support.paths import PERFDB
from tests.support.perfdb import Row, build_store, mapping_doc, write_version
from tests.support.prerequisites import require
from tests.support.stores import opened_store

V15_DIR = "vllm0.15.0_torch2.9.0_cann8.5"


@pytest.fixture()
def store_db(tmp_path):
    return make_db(tmp_path)


store = opened_store("store_db")


def test_exact_coordinate_is_measured_by_the_path(store):
    result = store.lookup(decode(1024), "v0.18")
    assert (result.latency_us, result.source) == (20.0, QuerySource.MEASURED)
    assert result.details["method"] == "exact_coordinate"
    assert result.details["exact_owner"] == "path"
    assert "base_attempts" not in result.details
    assert result.details["axes"] == {"seq": 1024.0, "batch": 1.0}
    assert result.details["matched_rows"][0]["line"] == 3
    assert result.details["attention_subcategory"] == "fused_infer_attention"


def test_seq_interpolates_in_sqrt_space(store):
    # √576 = 24, halfway between √256 = 16 (10.0) and √1024 = 32 (20.0)
    result = store.lookup(decode(576), "v0.18")
    assert result.source is QuerySource.INTERPOLATED
    assert result.latency_us == pytest.approx(15.0)
    assert result.details["method"] == "linear_1d"
    assert [r["axes"] for r in result.details["matched_rows"]] == [[256.0, 1.0], [1024.0, 1.0]]
    assert result.details["exact_owner"] == "path"
    assert "base_attempts" not in result.details


def test_seq_is_linear_without_the_transform(tmp_path):
    with make_store(tmp_path, sqrt=False) as s:
        # (576 − 256) / 768 of the way from 10.0 to 20.0
        assert s.lookup(decode(576), "v0.18").latency_us == pytest.approx(10 + 10 * 320 / 768)


def test_seq_and_batch_simplex(store):
    # the plane at √seq 24, batch 2: 10 + 8·10/16 + 10 = 25.0
    result = store.lookup(decode(576, batch=2), "v0.18")
    assert result.latency_us == pytest.approx(25.0)
    assert result.details["method"] == "simplex_2d"
    assert [p["axes"] for p in result.details["interpolation_path"]] == [
        ["seq"], ["seq", "batch"]]


def test_groups_are_seq_anchored_and_capped(tmp_path):
    # batch 2 at a measured seq: a batch-only group would answer; seq-anchored groups may not
    with make_store(tmp_path, max_dim=1) as s:
        result = s.lookup(decode(1024, batch=2), "v0.18")
    assert result.reason is Reason.DIMENSION_BLOCKED
    tried = [p["axes"] for p in result.details["attempted_kernels"][0]["interpolation_path"]]
    assert tried == [["seq"], ["seq", "batch"]]


def test_decode_and_prefill_never_share_a_coordinate(store):
    prefill = attention(1024, [1024])
    assert store.lookup(prefill, "v0.18").latency_us == 300.0
    assert store.lookup(decode(1024), "v0.18").latency_us == 20.0
    assert store.lookup(attention(576, [576]), "v0.18").latency_us == pytest.approx(200.0)


def test_heads_and_kv_heads_are_regime_fields(store):
    assert store.lookup(decode(1024, heads=8), "v0.18").latency_us == 21.0
    result = store.lookup(decode(1024, kv=2), "v0.18")
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_regime"]["kv_heads"] == 2


def test_the_target_reads_no_format(store):
    """``target_reads_formats`` is False, so the lookup tries no format for an unstated
    tensor: every tensor in FRACTAL_NZ (or NULL) gives the ND target, at seq 1024, batch 1."""
    entry = store.profile("v0.18").mapping.entry(OP)
    ctx = TargetContext(entry, KERNEL, store.profile("v0.18").mapping.policy(KERNEL))
    path = FusedInferAttentionPath()
    leaf = unstated(decode(1024))
    units = [f"args[{i}]" for i in range(len(leaf.args))] + ["outputs[0]"]
    targets = [path.target_regime(leaf.with_formats(dict.fromkeys(units, fmt)), ctx)
               for fmt in ("ND", "FRACTAL_NZ", "NULL")]
    assert not FusedInferAttentionPath.target_reads_formats
    assert targets[0].axes == (1024.0, 1.0)
    assert targets[1] == targets[0] and targets[2] == targets[0]


def test_quantized_attention_does_not_borrow_bf16_rows(store):
    result = store.lookup(decode(1024, dtype="int8", op="tensor_cast.attention_quant.default"),
                          "v0.18")
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_regime"]["activation_dtype"] == "INT8"


def test_float16_trace_reads_as_bf16(store):
    assert store.lookup(decode(1024, dtype="float16"), "v0.18").latency_us == 20.0


def test_seq_lens_without_values_is_a_required_field_miss(store):
    result = store.lookup(attention(1, None), "v0.18")
    assert result.reason is Reason.REQUIRED_FIELD_MISSING
    assert "seq_lens carries no values" in result.details["attempted_kernels"][0]["message"]
    absent = store.lookup(attention(1, [512], seq_lens=False), "v0.18")
    assert absent.reason is Reason.REQUIRED_FIELD_MISSING
    assert "argument 6" in absent.details["attempted_kernels"][0]["message"]


def test_outside_the_measured_seq_range_misses(store):
    result = store.lookup(decode(8192), "v0.18")
    assert result.latency_us is None
    assert result.reason in (Reason.OUTSIDE_RANGE, Reason.OUTSIDE_CONVEX_HULL)
    assert result.details["target_axes"] == [8192.0, 1.0]
    first = result.details["attempted_kernels"][0]["interpolation_path"][0]
    assert (first["axes"], first["outcome"]) == (["seq"], "outside_range")


def test_fractional_mean_meets_its_row_exactly(tmp_path):
    rows = [decode_row(256, 3, 5.0), fia_row([3, 4, 128], [512, 128, 128], 7.0,
                                             runtime(512 + 2 / 3, 3), table=[3, 64]),
            decode_row(1024, 3, 9.0)]
    with make_store(tmp_path, rows) as s:
        result = s.lookup(attention(3, [512, 513, 513]), "v0.18")
    assert (result.latency_us, result.source) == (7.0, QuerySource.MEASURED)
    assert result.details["method"] == "exact_coordinate"


def test_disable_switch_keeps_the_exact_coordinate_only(store):
    exact = store.lookup(decode(1024), "v0.18", interpolation=False)
    assert (exact.latency_us, exact.details["method"]) == (20.0, "exact_coordinate")
    between = store.lookup(decode(576), "v0.18", interpolation=False)
    assert between.latency_us is None
    assert between.reason is Reason.INTERPOLATION_DISABLED


def test_base_signature_never_answers_attention(tmp_path):
    # rows and leaf share (q, key, value) shapes and tc_input_count 3 makes that the whole
    # base key: the base lookup would merge every sequence length into one median (20.0)
    rows = [fia_row([1, 4, 128], [64, 128, 1, 128], v, runtime(s, 1), table=[1, 64])
            for s, v in ((256, 10.0), (1024, 20.0), (4096, 40.0))]
    with make_store(tmp_path, rows, entry_extra={"tc_input_count": 3}) as s:
        leaf = LeafOp.from_json({**decode(256).to_json(), "args": [
            {"shape": [1, 4, 128], "dtype": "bfloat16"},
            {"shape": [64, 128, 1, 128], "dtype": "bfloat16"},
            {"shape": [64, 128, 1, 128], "dtype": "bfloat16"}, None, None, None,
            {"shape": [1], "dtype": "int32", "values": [256]}, None]})
        result = s.lookup(leaf, "v0.18")
        profile = s.profile("v0.18")
        base, _ = s.dispatcher.base.lookup(leaf, profile.mapping.entry(OP), profile.mapping,
                                           profile.id)
    assert (result.latency_us, result.details["exact_owner"]) == (10.0, "path")
    assert base.latency_us == 20.0


def duplicate_rows() -> list[Row]:
    return [decode_row(256, 1, 10.0), decode_row(1024, 1, 18.0), decode_row(1024, 1, 22.0),
            decode_row(4096, 1, 40.0)]


def test_semantic_unique_makes_duplicates_ambiguous(tmp_path):
    with make_store(tmp_path, duplicate_rows(), unique=True) as s:
        exact = s.lookup(decode(1024), "v0.18")
        between = s.lookup(decode(2304), "v0.18")
    assert exact.reason is Reason.AMBIGUOUS_DUPLICATES
    # √2304 = 48: 1024 is left out, so between √256 = 16 (10.0) and √4096 = 64 (40.0)
    assert between.latency_us == pytest.approx(10 + 30 * (48 - 16) / 48)
    assert between.details["interpolation_path"][0]["ambiguous_excluded"] == 2


def test_duplicates_merge_by_median_without_the_policy(tmp_path):
    with make_store(tmp_path, duplicate_rows()) as s:
        result = s.lookup(decode(1024), "v0.18")
    assert result.latency_us == 20.0
    assert result.details["duplicates"]["count"] == 2


def refusals(tmp_path) -> dict[str, int]:
    with sqlite3.connect(tmp_path / "store.db") as conn:
        rows = conn.execute("select reason, count(*) from path_refusal "
                            "where path = 'attention_special' group by reason").fetchall()
    return {reason.split(":")[0]: n for reason, n in rows}


@pytest.mark.sqlite_only
def test_rows_without_runtime_sequence_are_refused(tmp_path):
    rows = [decode_row(256, 1, 11.0, heads=8),
            fia_row([16, 4, 128], [512, 128, 128], 12.0,
                    runtime(2048, 16, completeness="profile_shapes_only"), table=[16, 64])]
    with make_store(tmp_path, rows) as s:
        result = s.lookup(decode(2048, batch=16), "v0.18")
    assert result.reason is Reason.REGIME_MISMATCH
    [(reason, count)] = result.details["attempted_kernels"][0]["path_refusals"].items()
    assert count == 1 and "metadata_completeness=profile_shapes_only" in reason
    assert refusals(tmp_path) == {"required_field_missing": 1}


def legacy_row(q: list[int], key: list[int], seq: int, latency: float,
               table: list[int] | None = None, mask: bool = True) -> Row:
    return fia_row(q, key, latency, {"avg_seq_len": seq}, table=table, mask=mask)


@pytest.mark.sqlite_only
def test_legacy_rows_read_heads_and_kv_heads_from_shapes(tmp_path):
    rows = [legacy_row([1, 16, 128], [512, 128, 256], 512, 11.0, table=[1, 64]),
            legacy_row([1, 16, 128], [512, 128, 256], 3072, 14.0, table=[1, 64]),
            legacy_row([1, 16, 128], [512, 128, 256], -1, 13.0, table=[1, 64]),
            legacy_row([512, 16, 128], [512, 2, 128], 512, 18.0)]
    write_version(tmp_path / "data", {KERNEL: rows},
                  mapping_doc({OP: {"kernel_type": KERNEL, "query_mode": "attention_special"}}),
                  directory=V15_DIR)
    with build_store(tmp_path) as s:
        assert s.lookup(decode(512, heads=16, kv=2), "v0.15").latency_us == 11.0
        assert s.lookup(attention(512, [512], heads=16, kv=2), "v0.15").latency_us == 18.0
        regime = s.lookup(decode(3072, heads=16, kv=2), "v0.15").details["target_regime"]
    assert regime["layout"] == "TND" and regime["sparse_mode"] == 3
    assert refusals(tmp_path) == {"required_field_missing": 1}


# ---- the real corpus (format and quirks; latencies read from the CSVs) ---------------

DEVICE_DIR = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend"
VERSIONS = {"v0.13": "vllm0.13.0_torch2.8.0_cann8.3", "v0.15": V15_DIR,
            "v0.18": "vllm0.18.0_torch2.9.0_cann8.5"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    require(DEVICE_DIR.is_dir(), f"the profiling corpus beside the checkout ({DEVICE_DIR})")
    root = tmp_path_factory.mktemp("fia_corpus")
    for directory in VERSIONS.values():
        target = root / "data" / "DEVICE" / "vllm_ascend" / directory
        target.mkdir(parents=True)
        for name in (f"{KERNEL}.csv", "op_mapping.yaml"):
            shutil.copy(DEVICE_DIR / directory / name, target / name)
    with build_store(root) as s:
        yield s, root


def csv_latency(alias: str, line: int, column: str = "Average Duration(us)") -> float:
    with open(DEVICE_DIR / VERSIONS[alias] / f"{KERNEL}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return float(rows[line - 2][column])


def test_corpus_exact_and_sqrt_interpolation(corpus):
    store, _ = corpus
    exact = store.lookup(decode(512), "v0.18")
    assert exact.latency_us == csv_latency("v0.18", 2)
    assert exact.details["matched_rows"][0]["line"] == 2
    result = store.lookup(decode(2000), "v0.18")
    lo, hi = csv_latency("v0.18", 2), csv_latency("v0.18", 4)
    w = (math.sqrt(2000) - math.sqrt(512)) / (math.sqrt(4224) - math.sqrt(512))
    assert result.latency_us == pytest.approx(lo + w * (hi - lo))
    # line 3 (seq 3072) has only a profiling duration: it stays out of this column's line
    assert [r["line"] for r in result.details["matched_rows"]] == [2, 4]


def test_corpus_duplicate_prefill_rows_are_ambiguous(corpus):
    store, _ = corpus
    result = store.lookup(attention(512, [512], heads=8), "v0.18")
    assert result.reason is Reason.AMBIGUOUS_DUPLICATES
    assert result.details["attempted_kernels"][0]["ambiguous_rows"] == 2


def test_corpus_mla_rows_need_a_rope_input(corpus):
    store, _ = corpus
    leaf = LeafOp.from_json({**decode(512).to_json(), "args": [
        {"shape": [1, 16, 1, 512], "dtype": "bfloat16"},
        {"shape": [1135, 128, 1, 512], "dtype": "bfloat16"},
        {"shape": [1135, 128, 1, 512], "dtype": "bfloat16"}, None, None, None,
        {"shape": [1], "dtype": "int32", "values": [512]}, None]})
    result = store.lookup(leaf, "v0.18")
    assert result.reason is Reason.REGIME_MISMATCH
    assert result.details["target_regime"]["layout"] == "BNSD"
    assert result.details["target_regime"]["sparse_mode"] == 0


@pytest.mark.sqlite_only
def test_corpus_refusals_per_version(corpus):
    _, root = corpus
    with sqlite3.connect(root / "store.db") as conn:
        rows = conn.execute(
            "select p.alias, r.reason, count(*) from path_refusal r join profile_set p "
            "on p.id = r.profile_id where r.path = 'attention_special' group by 1, 2").fetchall()
    assert {(alias, reason.split(" (")[0], n) for alias, reason, n in rows} == {
        ("v0.13", "required_field_missing: sequence length not recorded", 1),
        ("v0.15", "required_field_missing: sequence length not recorded", 3),
        ("v0.18", "required_field_missing: runtime sequence metadata incomplete", 2),
    }


def test_corpus_legacy_versions_serve_tensor_cast_leaves(corpus):
    store, _ = corpus
    assert store.lookup(decode(3072), "v0.13").latency_us == csv_latency("v0.13", 3)
    assert store.lookup(decode(3072, heads=16, kv=2), "v0.15").latency_us == \
        csv_latency("v0.15", 23)
