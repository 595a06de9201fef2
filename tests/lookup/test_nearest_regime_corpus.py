"""The nearest regime of a regime miss on the corpus (store/lookup/nearest_regime.py): the
per-tensor float16 DynamicQuant leaf TensorCast's MoE models quantize with.

Expected values read by hand from
perfdb/ATLAS_800_A3_752T_128G_DIE/vllm_ascend/vllm0.18.0_torch2.9.0_cann8.5/DynamicQuant.csv
(line numbers count the header as line 1):
- line 1367: ``12,2048`` DT_FLOAT16 -> ``12,2048;12`` INT8;FLOAT (per-token scale),
  Average Duration 5.617396 us;
- line 1368: ``13,2048`` DT_FLOAT16, per-token, Average Duration 5.549339 us;
- no row has a one-element scale for a float16 ``[12, 2048]`` input (no per-tensor FP16
  regime at all).
"""

from __future__ import annotations

import pytest
from profstore.api import Store
from profstore.lookup import nearest_regime
from profstore.model.leaf import LeafOp
from profstore.model.result import QuerySource, Reason

from tests.support.regimes import SYM, per_tensor

pytestmark = pytest.mark.requires_perfdb

FP16_PER_TOKEN_12x2048 = 5.617396  # DynamicQuant.csv line 1367
FP16_PER_TOKEN_13x2048 = 5.549339  # DynamicQuant.csv line 1368


def test_the_miss_names_the_regime_that_differs_only_in_scale_mode(perfdb_store):
    result = perfdb_store.lookup(per_tensor(12, 2048), "v0.18")
    assert (result.source, result.reason, result.latency_us) == (
        None, Reason.REGIME_MISMATCH, None)  # the miss stays a miss
    nearest = result.details["nearest_regimes"]
    first = nearest[0]
    assert first["differs"] == {"scale_mode": ["per_tensor", "per_token"]}
    assert (first["kernel"], first["latency_us"], first["source"], first["method"]) == (
        "DynamicQuant", FP16_PER_TOKEN_12x2048, "MEASURED", "exact_coordinate")
    assert first["regime"]["activation_dtype"] == "DT_FLOAT16"
    assert first["regime"]["scale_mode"] == "per_token"
    assert result.details["target_regime"]["scale_mode"] == "per_tensor"


def test_ties_at_one_field_are_listed_the_answering_one_first(perfdb_store):
    nearest = perfdb_store.lookup(per_tensor(12, 2048), "v0.18").details["nearest_regimes"]
    assert 1 <= len(nearest) <= 3
    assert all(len(n["differs"]) == 1 for n in nearest)
    answering = [n for n in nearest if n["latency_us"] is not None]
    assert nearest[:len(answering)] == answering
    # the bf16 per-tensor rows (one-element scales) differ in the dtype alone
    assert {tuple(n["differs"]) for n in nearest} == {("scale_mode",), ("activation_dtype",)}


def test_only_a_regime_miss_names_nearest_regimes(perfdb_store):
    """bf16 has per-tensor rows of its own (one-element scales, 5 points): the bf16 target
    misses inside its regime, not for want of one, and names no other regime."""
    result = perfdb_store.lookup(per_tensor(12, 2048, "bfloat16"), "v0.18")
    assert result.source is None and result.reason is not Reason.REGIME_MISMATCH
    assert "nearest_regimes" not in result.details


def test_a_hit_carries_no_nearest_regime(perfdb_store):
    per_token = LeafOp.from_json({
        "op": SYM, "args": [{"shape": [12, 2048], "dtype": "float16"}, [-1], "float32", "int8"],
        "outputs": [{"shape": [12, 2048], "dtype": "int8"}, {"shape": [12], "dtype": "float32"}]})
    result = perfdb_store.lookup(per_token, "v0.18")
    assert (result.source, result.latency_us) == (QuerySource.MEASURED, FP16_PER_TOKEN_12x2048)
    assert "nearest_regimes" not in result.details


def test_a_regime_missed_at_a_new_shape_finds_its_nearest_regimes_once(perfdb_path, monkeypatch):
    """A search misses one regime at every new shape: the second miss names the same
    nearest regime, answered at its own shape, without comparing the regimes again."""
    compared = []
    closest = nearest_regime.closest
    monkeypatch.setattr(nearest_regime, "closest",
                        lambda *args: compared.append(args[0]) or closest(*args))
    with Store.open(perfdb_path) as store:  # its own caches: nothing asked before
        firsts = [store.lookup(per_tensor(m, 2048), "v0.18").details["nearest_regimes"][0]
                  for m in (12, 13)]
    assert [(f["differs"], f["latency_us"], f["method"]) for f in firsts] == [
        ({"scale_mode": ["per_tensor", "per_token"]}, FP16_PER_TOKEN_12x2048, "exact_coordinate"),
        ({"scale_mode": ["per_tensor", "per_token"]}, FP16_PER_TOKEN_13x2048, "exact_coordinate")]
    assert len(compared) == 1
