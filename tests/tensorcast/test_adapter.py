"""ProfstoreDataSource with duck-typed TensorCast invocations: exact conversion, lookups
equal to direct Store lookups on the corpus, and misses that explain themselves."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from profstore.api import Store
from profstore.model.leaf import LeafOp
from profstore.model.leaf_context import LeafContext
from profstore.model.result import QuerySource
from profstore.tensorcast import ProfstoreDataSource, TensorCastResult

from tests.support.markers import requires_perfdb
from tests.support.paths import REPO
from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.torch_fakes import (
    CASES,
    EXPECTED,
    FakeOp,
    FakeTensor,
    Overload,
    SymbolicShapeTensor,
    TorchDtype,
    csv_latency,
    dynamic_quant,
    fake_tensor,
    mm,
    spec,
    with_aliases,
)

RMS = "tensor_cast.rms_norm.default"


# --- the DESIGN §8 operators: invocation builders (tensor factory t, dtype factory d) ------


# --- a small fixture database: hits, a gap to interpolate, a composite with a missing part -

@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("small")
    rows = [Row([[n, 7168], [7168]], ["DT_BF16", "DT_BF16"], [[n, 7168]], ["DT_BF16"], lat)
            for n, lat in ((8, 10.0), (16, 14.0))]
    entries = {RMS: {"kernel_type": "RmsNorm"},
               "tensor_cast.fused.default": {"composite": True,
                                             "sub_kernels": ["RmsNorm", "Absent"]}}
    write_version(tmp / "data", {"RmsNorm": rows}, mapping_doc(entries))
    return build_database(tmp)


@pytest.fixture(scope="module")
def small_store(small_db):
    with Store.open(small_db) as store:
        yield store


@pytest.fixture()
def source(small_store):
    return ProfstoreDataSource(small_store, "v0.18", ep_size=16, tp_size=1)


def rms(tokens, op=RMS, dtype="bfloat16"):
    return FakeOp(Overload(op), (fake_tensor((tokens, 7168), dtype),
                                 fake_tensor((7168,), dtype), 1e-6),
                  {}, fake_tensor((tokens, 7168), dtype))


@pytest.mark.parametrize("build", CASES, ids=lambda f: f.__name__)
def test_conversion_is_exact(source, build):
    assert source.to_leaf(build(fake_tensor, TorchDtype)) == EXPECTED[build]


def test_torch_ops_prefix_and_kwargs(source):
    op = FakeOp("torch.ops.aten.topk.default", (fake_tensor((4, 32), "float32"), 8),
                {"phase": "prefill", "sorted": True, "indices": fake_tensor((4, 8), "int64"),
                 "device": Overload("meta")}, [fake_tensor((4, 8), "float32"), None])
    assert source.to_leaf(op) == LeafOp(
        "aten.topk.default", args=(spec((4, 32), "float32"), 8),
        kwargs={"sorted": True, "indices": spec((4, 8), "int64"), "device": "meta"},
        outputs=(spec((4, 8), "float32"),),
        context=LeafContext(ep_size=16, tp_size=1, phase="prefill"))


@pytest.mark.parametrize(("flags", "phase"), [([False, False], "prefill"),
                                              ([True, False], "mixed"), ([], None)])
def test_is_decode_values_give_the_phase(source, flags, phase):
    op = rms(8)
    op.kwargs = {"is_decode_values": flags}
    leaf = source.to_leaf(op)
    assert (leaf.context.phase, leaf.kwargs) == (phase, ())


def test_values_only_for_small_readable_integer_tensors(source):
    op = FakeOp(Overload("x.default"), (
        fake_tensor((2,), "int32", data=[5, 6]),
        FakeTensor((2,), TorchDtype("int32"), data=[5, 6], device="meta"),
        fake_tensor((4097,), "int64", data=list(range(4097))),
        fake_tensor((2,), "float32", data=[0.5, 1.5]),
        fake_tensor((2,), "int32")))
    assert [a.values for a in source.to_leaf(op).args] == [(5, 6), None, None, None, None]


def test_format_from_an_enum_or_the_hook(small_store):
    class Fmt:
        name = "FRACTAL_NZ"

    weight = fake_tensor((16, 32), "int8", Fmt())
    plain = fake_tensor((16, 32), "int8")
    hook = ProfstoreDataSource(small_store, "v0.18",
                               format_of=lambda t: "NC1HWC0" if t is plain else None)
    leaf = hook.to_leaf(FakeOp(Overload("x.default"), (weight, plain)))
    assert [a.format for a in leaf.args] == ["FRACTAL_NZ", "NC1HWC0"]


def test_module_does_not_import_torch():
    code = "import sys, store.tensorcast; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "False"


# --- lookups, hits and misses on the fixture database -------------------------------------

def test_hit_equals_the_direct_lookup_and_resets_the_miss(source, small_store):
    assert source.lookup(rms(128)) is None
    result = source.lookup(rms(16))
    direct = small_store.lookup(source.to_leaf(rms(16)), "v0.18")
    assert isinstance(result, TensorCastResult)
    assert result.as_dict() == with_aliases(direct)
    assert (result.latency_us, result.source) == (14.0, QuerySource.MEASURED)
    assert result.shape_debug_statistics() == {"kernel_shapes": "[[16, 7168], [7168]]",
                                                "shape_match_rule": "base_exact"}
    assert (source.last_miss_reason, source.last_miss_details) == (None, None)


def test_miss_returns_none_with_reason_and_details(source):
    assert source.lookup(rms(128)) is None
    assert source.last_miss_reason == "outside_range"
    assert source.last_miss_details["op"] == RMS
    assert source.last_result.reason.value == "outside_range"


def test_unmapped_op_is_a_miss(source):
    assert source.lookup(rms(16, op="tensor_cast.nope.default")) is None
    assert source.last_miss_reason == "unmapped"
    assert source.last_miss_details["op"] == "tensor_cast.nope.default"


@pytest.mark.parametrize(("op", "message"), [
    (rms(16, dtype="complex128"), "args[0].dtype: unknown dtype 'torch.complex128'"),
    (FakeOp(Overload(RMS), (fake_tensor((16, -1), "bfloat16"),)),
     "args[0].shape: dimension -1 is negative"),
    (FakeOp(Overload(RMS), (fake_tensor((16, 7168), "bfloat16"),), {"phase": "decode",
                                                                    "is_decode_values": [False]}),
     "kwargs.phase: 'decode' contradicts is_decode_values (prefill)"),
    (FakeOp(Overload(RMS), (), {"phase": "warmup"}),
     "phase: must be one of prefill, decode, mixed, got 'warmup'"),
    (FakeOp(Overload(RMS), (FakeTensor((2,), "fp8"),)), "args[0].dtype: unknown dtype 'fp8'"),
])
def test_conversion_failure_is_an_invalid_descriptor_miss(source, op, message):
    assert source.lookup(op) is None
    assert source.last_miss_reason == "invalid_descriptor"
    assert source.last_miss_details["message"].startswith(message)
    assert source.last_miss_details["op"] == RMS


def test_unknown_dtype_object_among_the_args_is_invalid(source):
    op = FakeOp(Overload(RMS), (fake_tensor((16, 7168), "bfloat16"), TorchDtype("bfloat17")))
    assert source.lookup(op) is None
    assert source.last_miss_details["message"].startswith("args[1]: unknown dtype")


def test_a_tensor_that_raises_is_an_invalid_descriptor(source):
    assert source.lookup(FakeOp(Overload(RMS), (SymbolicShapeTensor(),))) is None
    assert source.last_miss_reason == "invalid_descriptor"
    assert source.last_miss_details["message"] == "RuntimeError: symbolic shape"


def test_partial_composite_is_returned_as_a_miss(source):
    assert source.lookup(rms(16, op="tensor_cast.fused.default")) is None
    assert source.last_miss_reason == "partial_composite"
    assert source.last_miss_details["partial_latency_us"] == 14.0
    assert source.last_miss_details["missed_kernels"] == {"Absent": "csv_not_found"}
    assert source.last_result.source is QuerySource.PARTIAL


def test_interpolation_switch(small_store):
    on = ProfstoreDataSource(small_store, "v0.18")
    off = ProfstoreDataSource(small_store, "v0.18", interpolation=False)
    assert on.lookup(rms(12)).latency_us == pytest.approx(12.0)
    assert off.lookup(rms(12)) is None
    assert off.last_miss_reason == "no_exact_match"


def test_mapping_overlay_file_applies_to_this_source_only(small_store, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump(mapping_doc({"tensor_cast.my_norm.default":
                                                   {"kernel_type": "RmsNorm"}})))
    source = ProfstoreDataSource(small_store, "v0.18", mapping_overlay=overlay)
    assert source.lookup(rms(16, op="tensor_cast.my_norm.default")).latency_us == 14.0
    plain = ProfstoreDataSource(small_store, "v0.18")
    assert plain.lookup(rms(16, op="tensor_cast.my_norm.default")) is None
    assert plain.last_miss_reason == "unmapped"


def test_opens_a_database_path_and_rejects_unknown_versions(small_db):
    with ProfstoreDataSource(str(small_db), "v0.18") as source:
        assert source.lookup(rms(8)).latency_us == 10.0
    with pytest.raises(ValueError, match=r"version 'v9' is not in the database; ingested: v0.18"):
        ProfstoreDataSource(small_db, "v9")


def test_parallel_sizes_are_validated(small_store):
    with pytest.raises(ValueError, match="ep_size: must be a positive integer"):
        ProfstoreDataSource(small_store, "v0.18", ep_size=0)


# --- the corpus: adapter lookups equal direct Store lookups -------------------------------


@pytest.fixture(scope="module")
def corpus(perfdb_store):
    return ProfstoreDataSource(perfdb_store, "v0.18", ep_size=16, tp_size=1)


@requires_perfdb
@pytest.mark.parametrize("build", CASES, ids=lambda f: f.__name__)
def test_adapter_equals_direct_store_lookup(corpus, perfdb_store, build):
    op = build(fake_tensor, TorchDtype)
    direct = perfdb_store.lookup(EXPECTED[build], "v0.18")
    result = corpus.lookup(op)
    complete = direct.hit and direct.source is not QuerySource.PARTIAL
    assert (result is not None) == complete
    if complete:
        assert result.as_dict() == with_aliases(direct)
    else:
        assert corpus.last_miss_reason == direct.reason.value
        assert corpus.last_result.as_dict() == direct.as_dict()


@requires_perfdb
def test_mm_hits_the_measured_rows(corpus):
    result = corpus.lookup(mm(fake_tensor, TorchDtype))
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == csv_latency(
        "MatMulV2", Input_Shapes="1,1536;96,192,16,16", Input_Data_Types="DT_BF16;DT_BF16",
        Output_Shapes="1,3072")


@requires_perfdb
def test_phase2_dynamic_quant_hits_its_measured_row(corpus):
    result = corpus.lookup(dynamic_quant(fake_tensor, TorchDtype))
    assert result is not None, corpus.last_miss_details
    assert result.source is QuerySource.MEASURED
    assert result.latency_us == csv_latency(
        "DynamicQuant", Input_Shapes="2,7168", Input_Data_Types="DT_BF16",
        Output_Shapes="2,7168;2", Output_Data_Types="INT8;FLOAT")
