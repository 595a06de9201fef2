"""Time by source (``profstore.tensorcast.time_split``) over ledgers written by hand.

Every expected figure is calls × latency added up by hand below each ledger."""

from __future__ import annotations

import pytest
from profstore.tensorcast.ledger import Kind, ModelLedger, PricedOp
from profstore.tensorcast.time_split import (
    by_class,
    by_configuration,
    config_label,
    split,
    upstream_side,
)

TP4 = {"TP": 4, "PP": 1, "DP": 2, "EP": 1, "MOE-TP": 4, "MOE-DP": 1, "MTP": 0}
TP8 = {"TP": 8, "PP": 1, "DP": 1, "EP": 1, "MOE-TP": 8, "MOE-DP": 1, "MTP": 0}


def ledger(config: dict[str, int], *ops: PricedOp) -> ModelLedger:
    return ModelLedger(config, {f"key{i}": op for i, op in enumerate(ops)})


@pytest.fixture
def models() -> list[ModelLedger]:
    # TP=4: mm 10 us x 3 = 30 measured, add 2 x 10 = 20 interpolated, view 0 x 100 zero-cost,
    # pow 5 x 2 = 10 unmapped, mul 4 x 5 = 20 regime_mismatch: 80 us
    # TP=8: mm 12 x 1 = 12 measured, pow 50 x 1 = 50 unmapped: 62 us
    return [
        ledger(TP4,
               PricedOp("aten.mm.default", "MatMulV2", Kind.MEASURED, 10.0, 9.0, calls=3,
                        upstream_kind="measured", upstream_us=11.0),
               PricedOp("aten.add.Tensor", "Add", Kind.INTERPOLATED, 2.0, 1.0, calls=10,
                        upstream_kind="fallback", upstream_reason="no_match"),
               PricedOp("aten.view.default", "aten.view.default", Kind.ZERO_COST, 0.0, 0.0,
                        calls=100),
               PricedOp("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Scalar", Kind.FALLBACK,
                        5.0, 5.0, "unmapped", calls=2),
               PricedOp("aten.mul.Tensor", "Mul", Kind.FALLBACK, 4.0, 4.0,
                        "regime_mismatch", calls=5)),
        ledger(TP8,
               PricedOp("aten.mm.default", "MatMulV2", Kind.MEASURED, 12.0, 9.0, calls=1),
               PricedOp("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Scalar", Kind.FALLBACK,
                        50.0, 50.0, "unmapped", calls=1)),
    ]


def test_the_run_split_adds_up_to_every_call_priced(models):
    found = split([op for m in models for op in m.ops.values()]).to_json()
    assert found["measured_us"] == 42.0
    assert found["interpolated_us"] == 20.0
    assert found["zero_cost_us"] == 0.0 and found["calls"]["zero_cost"] == 100
    assert found["fallback_us"] == {"regime_mismatch": 20.0, "unmapped": 60.0}
    assert found["total_us"] == 142.0
    assert found["shares"]["measured"] == pytest.approx(42 / 142)
    assert found["shares"]["fallback"] == pytest.approx(80 / 142)
    assert sum(v for k, v in found["shares"].items()) == pytest.approx(1.0)
    assert (found["partial_us"], found["calibrated_us"], found["extrapolated_us"]) == (0, 0, 0)


def test_each_configuration_has_its_own_split(models):
    found = by_configuration(models)
    tp4, tp8 = config_label(TP4), config_label(TP8)
    assert tp4 == "TP=4 | PP=1 | DP=2 | EP=1 | MOE-TP=4 | MOE-DP=1"
    assert found[tp4].total_us == 80.0 and found[tp8].total_us == 62.0
    assert found[tp4].share("measured") == pytest.approx(30 / 80)
    assert found[tp8].fallback_us() == {"unmapped": 50.0}


def test_classes_are_ordered_by_their_time(models):
    found = by_class(models)
    assert list(found) == ["aten.pow.Tensor_Scalar", "MatMulV2", "Add", "Mul",
                           "aten.view.default"]
    assert found["MatMulV2"].total_us == 42.0


def test_upstreams_side_prices_its_misses_with_the_analytic_time(models):
    # mm: upstream measured 11 x 3 = 33; add: upstream missed, analytic 1 x 10 = 10;
    # the ops upstream was not asked about are left out
    found = split(models[0].ops.values(), upstream_side).to_json()
    assert found["measured_us"] == 33.0
    assert found["fallback_us"] == {"no_match": 10.0}
    assert found["total_us"] == 43.0
