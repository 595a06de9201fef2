"""Stated regime equivalences on the corpus (store/lookup/regime_policy.py): the per-tensor
float16 DynamicQuant leaf read as per-token when, and only when, the caller states it.

Expected value read by hand from
perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5/DynamicQuant.csv
line 1367 (the header is line 1): ``12,2048`` DT_FLOAT16 -> ``12,2048;12`` INT8;FLOAT,
Average Duration 5.617396 us. Line 510, the bf16 row of the same shape (6.066454 us, the
figure upstream answers), must not be it.
"""

from __future__ import annotations

import pytest
from profstore.api import Store
from profstore.model.result import QuerySource, Reason
from profstore.tensorcast.data_source import ProfstoreDataSource

from tests.support.regimes import SYM, per_tensor
from tests.support.torch_fakes import FakeOp, Overload, TorchDtype, fake_tensor

pytestmark = pytest.mark.requires_perfdb

POLICY = {"ops": {SYM: {"scale_mode": {"per_tensor": "per_token"}}}}
FP16_PER_TOKEN_12x2048 = 5.617396  # DynamicQuant.csv line 1367


def test_the_stated_equivalence_answers_the_fp16_per_token_row(perfdb_path):
    with Store.open(perfdb_path) as store:
        plain = store.lookup(per_tensor(12, 2048), "v0.18")
        stated = store.lookup(per_tensor(12, 2048), "v0.18", regime_policy=POLICY)
        again = store.lookup(per_tensor(12, 2048), "v0.18")  # cached apart: still a miss
    assert plain.reason is Reason.REGIME_MISMATCH and again.reason is Reason.REGIME_MISMATCH
    assert (stated.latency_us, stated.source) == (FP16_PER_TOKEN_12x2048, QuerySource.MEASURED)
    assert stated.details["regime_equivalences"] == [
        {"field": "scale_mode", "target": "per_tensor", "used": "per_token"}]
    assert stated.details["regime_of_target"]["scale_mode"] == "per_tensor"
    assert [(r["file"], r["line"]) for r in stated.details["matched_rows"]] == [
        ("DynamicQuant.csv", 1367)]


def test_a_kernel_wide_equivalence_answers_the_same(perfdb_store):
    policy = {"kernels": {"DynamicQuant": {"scale_mode": {"per_tensor": "per_token"}}}}
    result = perfdb_store.lookup(per_tensor(12, 2048), "v0.18", regime_policy=policy)
    assert (result.latency_us, result.source) == (FP16_PER_TOKEN_12x2048, QuerySource.MEASURED)


def test_an_equivalence_for_another_value_changes_nothing(perfdb_store):
    policy = {"ops": {SYM: {"scale_mode": {"per_channel": "per_token"}}}}
    result = perfdb_store.lookup(per_tensor(12, 2048), "v0.18", regime_policy=policy)
    assert result.reason is Reason.REGIME_MISMATCH
    assert "regime_equivalences" not in result.details


@pytest.mark.parametrize(("policy", "message"), [
    ({"ops": {SYM: {"scale_mod": {"per_tensor": "per_token"}}}},
     "unknown regime field 'scale_mod'"),
    ({"ops": {SYM: {"scale_mode": {"per_tensor": "per_tokn"}}}}, "unknown value 'per_tokn'"),
    ({"ops": {"aten.nope.default": {"scale_mode": {"per_tensor": "per_token"}}}},
     "unknown op 'aten.nope.default'"),
    ({"kernels": {"NoSuchKernel": {"scale_mode": {"per_tensor": "per_token"}}}},
     "unknown kernel 'NoSuchKernel'"),
])
def test_an_unknown_name_fails_at_construction(perfdb_store, policy, message):
    with pytest.raises(ValueError) as raised:
        ProfstoreDataSource(perfdb_store, "v0.18", regime_policy=policy)
    assert message in str(raised.value)
    with pytest.raises(ValueError) as raised:
        perfdb_store.lookup(per_tensor(12, 2048), "v0.18", regime_policy=policy)
    assert message in str(raised.value)


def invocation() -> FakeOp:
    """TensorCast's call: x, dims=[], the scale and quantized dtypes; out (int8, scale)."""
    return FakeOp(Overload(SYM), (fake_tensor((12, 2048), "float16"), [],
                                  TorchDtype("float32"), TorchDtype("int8")), {},
                  (fake_tensor((12, 2048), "int8"), fake_tensor((), "float32")))


def test_the_data_source_answers_through_its_policy(perfdb_store):
    plain = ProfstoreDataSource(perfdb_store, "v0.18")
    assert plain.lookup(invocation()) is None
    assert plain.last_miss_reason == "regime_mismatch"
    assert plain.last_miss_details["nearest_regimes"][0]["latency_us"] == FP16_PER_TOKEN_12x2048
    stated = ProfstoreDataSource(perfdb_store, "v0.18", regime_policy=POLICY)
    answer = stated.lookup(invocation())
    assert answer is not None and answer.latency_us == FP16_PER_TOKEN_12x2048
    assert stated.last_result.details["regime_equivalences"][0]["used"] == "per_token"
