"""TensorCast objects carry no memory format: through ProfstoreDataSource the FRACTAL_NZ
paths answer as a descriptor that states the formats does (values from the v0.18 CSVs)."""

from __future__ import annotations

import pytest
from profstore.model.result import QuerySource
from profstore.tensorcast import ProfstoreDataSource

from tests.support.markers import requires_perfdb
from tests.support.torch_fakes import FakeOp, Overload, TorchDtype, dfc_quant, fake_tensor

NZ_WEIGHT = (2048, 5120)


def unstated(shape, dtype, fmt=None, data=None):
    """A tensor factory that drops the format, as a TensorCast meta tensor does."""
    return fake_tensor(shape, dtype, None, data)


def nz_weight(shape, dtype, fmt=None, data=None):
    return fake_tensor(shape, dtype, "FRACTAL_NZ" if shape == NZ_WEIGHT else "ND", data)


def mm(m, tensor):
    return FakeOp(Overload("aten.mm.default"),
                  (tensor((m, 2048), "bfloat16"), tensor(NZ_WEIGHT, "bfloat16")), {},
                  tensor((m, 5120), "bfloat16"))


@pytest.fixture(scope="module")
def source(perfdb_store):
    return ProfstoreDataSource(perfdb_store, "v0.18", ep_size=16, tp_size=1)


@requires_perfdb
def test_dispatch_ffn_combine_quant_answers_with_formats_unstated(source):
    stated = source.lookup(dfc_quant(fake_tensor, TorchDtype))
    inferred = source.lookup(dfc_quant(unstated, TorchDtype))
    # DispatchFFNCombine.csv lines 17 and 37 (64 tokens, EP 16, W8A8 NZ weights):
    # 646.232303 and 659.445932, merged by median
    assert stated.latency_us == inferred.latency_us == pytest.approx(652.8391175)
    assert inferred.source is QuerySource.MEASURED
    assert [r["line"] for r in inferred.details["matched_rows"]] == [17, 37]
    assert inferred.details["format_source"] == "inferred"
    assert (inferred.details["resolved_formats"]["args[2]"],
            inferred.details["resolved_formats"]["args[7]"]) == ("FRACTAL_NZ", "FRACTAL_NZ")


@requires_perfdb
def test_nz_matmul_interpolation_answers_with_formats_unstated(source):
    # MatMulV2.csv: (K, N) = (2048, 5120) is measured with NZ weights only: M 4 (line 43)
    # 22.843359, M 6 (line 44) 23.042962 -> M 5: 22.9431605. ND rows reach (5, 2048, 5120)
    # only by interpolating across K; the NZ rows measure this weight.
    stated = source.lookup(mm(5, nz_weight))
    inferred = source.lookup(mm(5, unstated))
    assert stated.latency_us == inferred.latency_us == pytest.approx(22.9431605)
    assert (inferred.source, inferred.details["method"]) == (QuerySource.INTERPOLATED,
                                                             "linear_1d")
    assert [r["line"] for r in inferred.details["matched_rows"]] == [43, 44]
    assert inferred.details["resolved_formats"]["args[1]"] == "FRACTAL_NZ"
    others = [c for c in inferred.details["format_candidates"]
              if c["formats"]["args[1]"] == "ND"]
    assert [c["across_anchor_axes"] for c in others] == [True]


@requires_perfdb
def test_a_format_policy_decides_what_the_data_cannot(source, perfdb_store):
    policy = ProfstoreDataSource(perfdb_store, "v0.18",
                                 format_policy={"ops": {"aten.mm.default": {"1": "ND"}}})
    nd = policy.lookup(mm(5, unstated))
    assert nd.details["format_sources"]["args[1]"] == "policy"
    assert nd.details["target_regime"]["formats"] == "ND;ND"
    assert nd.latency_us != pytest.approx(22.9431605)


@requires_perfdb
@pytest.mark.parametrize(("policy", "message"), [
    ({"ops": {"aten.mmm.default": {"1": "ND"}}},
     "format_policy.ops: unknown op 'aten.mmm.default' (not in the v0.18 mapping)"),
    ({"ops": {"aten.mm.default": {"1": "NZ"}}},
     "format_policy.ops['aten.mm.default']['1']: unknown format 'NZ'"),
    ({"default": "ND", "run": "x"}, "format_policy: unknown key 'run'"),
])
def test_a_bad_format_policy_is_refused_at_construction(perfdb_store, policy, message):
    with pytest.raises(ValueError) as error:
        ProfstoreDataSource(perfdb_store, "v0.18", format_policy=policy)
    assert str(error.value).startswith(message)
