"""Four behaviours TensorCast's own suites exposed (issue #15), on fixtures of ours.

- FIA quant mode: rows of another ``Runtime quant_mode`` are another regime (RFC §2.2).
- BNSD kv_heads: the target reads KV heads from the key's dimension 1, like the row.
- MatMul without an output: N is the weight's last dimension (RFC §4.4.2, M x K and K x N).
- Communication CSVs inside a version directory (no ``communication_data_ref``).

Every expected latency is read off the fixture rows below or interpolated by hand.
"""

from __future__ import annotations

import pytest
from profstore.ingest.loader import ingest_path
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason
from profstore.storage.engines import make_engine, upgrade

from tests.support.fia import fia_row, make_store, runtime
from tests.support.perfdb import Row, build_store, mapping_doc, new_database, write_version

FIA_OP = "tensor_cast.attention.default"
QUANT = "Runtime quant_mode"


def decode_rows(latency_by_seq: dict[int, float], quant: str) -> list[Row]:
    """Paged TND decode rows, batch 2, 4 heads, 1 KV head, with a quant mode cell."""
    return [fia_row([2, 4, 128], [512, 128, 128], latency, {**runtime(seq, 2), QUANT: quant},
                    table=[2, 64]) for seq, latency in latency_by_seq.items()]


def tnd_decode(seq: int) -> LeafOp:
    cache = {"shape": [64, 128, 1, 128], "dtype": "bfloat16"}
    return LeafOp.from_json({
        "op": FIA_OP,
        "args": [{"shape": [2, 512], "dtype": "bfloat16"}, cache, cache, None,
                 {"shape": [2, 8], "dtype": "int32"}, None,
                 {"shape": [2], "dtype": "int32", "values": [seq, seq]}, None],
        "outputs": [{"shape": [2, 512], "dtype": "bfloat16"}]})


# W8A8 rows 100 / 200 us and unquantised rows 900 / 1200 us at the same seq 1000 / 2000.
QUANT_ROWS = decode_rows({1000: 100.0, 2000: 200.0}, "W8A8") + decode_rows(
    {1000: 900.0, 2000: 1200.0}, "")


def test_w8a8_mapping_reads_only_w8a8_rows(tmp_path):
    with make_store(tmp_path, QUANT_ROWS, sqrt=False, entry_extra={"quant_mode": "W8A8"}) as s:
        middle = s.lookup(tnd_decode(1500), "v0.18")
        exact = s.lookup(tnd_decode(1000), "v0.18")
    # halfway between the W8A8 rows 100 and 200 (the median merge gave 600)
    assert (middle.source, middle.latency_us) == (QuerySource.INTERPOLATED, pytest.approx(150.0))
    assert middle.details["target_regime"]["quant_mode"] == "W8A8"
    assert (exact.source, exact.latency_us) == (QuerySource.MEASURED, 100.0)


def test_unquantised_mapping_reads_only_blank_quant_rows(tmp_path):
    with make_store(tmp_path, QUANT_ROWS, sqrt=False) as s:
        middle = s.lookup(tnd_decode(1500), "v0.18")
        exact = s.lookup(tnd_decode(2000), "v0.18")
    assert middle.latency_us == pytest.approx((900.0 + 1200.0) / 2)
    assert "quant_mode" not in middle.details["target_regime"]
    assert (exact.source, exact.latency_us) == (QuerySource.MEASURED, 1200.0)


def test_w8a8_mapping_misses_on_rows_that_record_no_quant_mode(tmp_path):
    rows = decode_rows({1000: 900.0, 2000: 1200.0}, "")
    with make_store(tmp_path, rows, sqrt=False, entry_extra={"quant_mode": "W8A8"}) as s:
        result = s.lookup(tnd_decode(1500), "v0.18")
    assert (result.latency_us, result.reason) == (None, Reason.REGIME_MISMATCH)


def bnsd_rows() -> list[Row]:
    """BNSD decode rows: query (B=2, N=4, S=1, D=128), key (2, 4 KV heads, 16, 128)."""
    return [fia_row([2, 4, 1, 128], [2, 4, 16, 128], latency,
                    runtime(seq, 2, heads=4, kv=4, sparse=0, layout="BNSD_NBSD"), mask=False)
            for seq, latency in ((1000, 120.0), (2000, 220.0))]


def bnsd_decode(seq: int) -> LeafOp:
    key = {"shape": [2, 4, 16, 128], "dtype": "bfloat16"}
    return LeafOp.from_json({
        "op": FIA_OP,
        "args": [{"shape": [2, 4, 1, 128], "dtype": "bfloat16"}, key, key, None, None, None,
                 {"shape": [2], "dtype": "int32", "values": [seq, seq]}, None],
        "outputs": [{"shape": [2, 4, 1, 128], "dtype": "bfloat16"}]})


def test_bnsd_target_reads_kv_heads_from_dimension_one(tmp_path):
    with make_store(tmp_path, bnsd_rows(), sqrt=False) as s:
        middle = s.lookup(bnsd_decode(1500), "v0.18")
        exact = s.lookup(bnsd_decode(2000), "v0.18")
    # the key (2, 4, 16, 128) has 4 KV heads, not 16 (its sequence dimension)
    assert middle.details["target_regime"]["kv_heads"] == 4
    assert (middle.source, middle.latency_us) == (QuerySource.INTERPOLATED, pytest.approx(170.0))
    assert (exact.source, exact.latency_us) == (QuerySource.MEASURED, 220.0)


MM = "aten.mm.default"
MM_ROWS = [Row([[m, 512], [512, 1024]], ["DT_BF16", "DT_BF16"], [[m, 1024]], ["DT_BF16"],
               m / 10) for m in (100, 200, 400)]


def mm(m: int, weight_dtype: str = "bfloat16") -> LeafOp:
    """A matmul leaf without outputs, as TensorCast's suites build them."""
    return LeafOp.from_json({"op": MM, "args": [{"shape": [m, 512], "dtype": "bfloat16"},
                                                {"shape": [512, 1024], "dtype": weight_dtype}]})


@pytest.fixture()
def mm_store(tmp_path):
    write_version(tmp_path / "data", {"MatMulV2": MM_ROWS},
                  mapping_doc({MM: {"kernel_type": "MatMulV2"}}))
    with build_store(tmp_path) as store:
        yield store


def test_matmul_without_output_interpolates_with_n_from_the_weight(mm_store):
    result = mm_store.lookup(mm(150), "v0.18")
    # between M=100 (10.0 us) and M=200 (20.0 us), N=1024 taken from the weight (512, 1024)
    assert (result.source, result.latency_us) == (QuerySource.INTERPOLATED, pytest.approx(15.0))
    assert result.details["axes"] == {"M": 150.0, "K": 512.0, "N": 1024.0}
    assert result.details["target_regime"]["output_dtype"] == "DT_BF16"


def test_matmul_without_output_hits_the_measured_row(mm_store):
    result = mm_store.lookup(mm(400), "v0.18")
    assert (result.source, result.latency_us) == (QuerySource.MEASURED, 40.0)


def test_matmul_without_output_of_mixed_dtypes_still_needs_the_output(mm_store):
    # bf16 x int8 does not say its output dtype: a regime field stays unknown
    result = mm_store.lookup(mm(150, weight_dtype="int8"), "v0.18")
    assert (result.latency_us, result.reason) == (None, Reason.REQUIRED_FIELD_MISSING)
    assert "no output" in result.details["attempted_kernels"][0]["message"]


ALL_REDUCE = "tensor_cast.all_reduce.default"
COMM_CSV = ("message_bytes,num_devices,dtype,topology_tier,Duration(us)\n"
            "100000,16,DT_BF16,0,100.0\n200000,16,DT_BF16,0,200.0\n400000,16,DT_BF16,0,400.0\n")


def all_reduce(elements: int) -> LeafOp:
    return LeafOp.from_json({"op": ALL_REDUCE, "args": [
        {"shape": [elements], "dtype": "bfloat16"}, 0, list(range(16))]})


@pytest.fixture()
def legacy_comm(tmp_path):
    """The older layout: hcom_allReduce_.csv beside the kernel CSVs, no communication_data_ref."""
    entries = {ALL_REDUCE: {"kernel_type": "hcom_allReduce_", "category": "communication"},
               MM: {"kernel_type": "MatMulV2"}}
    write_version(tmp_path / "data", {"MatMulV2": MM_ROWS, "hcom_allReduce_": COMM_CSV},
                  mapping_doc(entries))
    return tmp_path


def test_communication_csv_in_a_version_directory_is_ingested(legacy_comm):
    engine = make_engine(new_database(legacy_comm, stem="count"))
    try:
        upgrade(engine)
        [summary] = ingest_path(engine, legacy_comm / "data")
    finally:
        engine.dispose()
    # 3 MatMulV2 rows + 3 communication rows, nothing refused
    assert (summary.files, summary.rows_read, summary.rows_accepted) == (2, 6, 6)
    assert summary.rows_rejected == 0


def test_communication_in_a_version_directory_answers_like_hccl_data(legacy_comm):
    with build_store(legacy_comm) as store:
        middle = store.lookup(all_reduce(75_000), "v0.18")
        exact = store.lookup(all_reduce(50_000), "v0.18")
        matmul = store.lookup(mm(200), "v0.18")
    # 150000 bytes on the line through the bracketing rows (100000, 100) and (200000, 200)
    assert (middle.source, middle.latency_us) == (QuerySource.INTERPOLATED, pytest.approx(150.0))
    assert middle.details["method"] == "alpha_beta_local"
    assert (exact.source, exact.latency_us) == (QuerySource.MEASURED, 100.0)
    assert matmul.latency_us == 20.0
