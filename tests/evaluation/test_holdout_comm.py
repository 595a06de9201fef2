"""Leave-one-out of the communication rule on a fixture with hand-computed errors."""

from __future__ import annotations

import json

import pytest
from profstore.cli.main import main
from profstore.evaluation.holdout import run_holdout

from tests.support.perfdb import (
    Row,
    build_database,
    build_store,
    mapping_doc,
    write_hccl,
    write_version,
)

ALL_REDUCE = "tensor_cast.all_reduce.default"
# 4 devices, tier 1: sizes 1000, 2000, 3000, 4000 B -> 10, 14, 15, 20 µs; 2000 and 3000 are
# the interior sizes that are scored.
ROWS = [(1000, 4, "DT_BF16", 1, 10.0, 0.1), (2000, 4, "DT_BF16", 1, 14.0, 0.1),
        (3000, 4, "DT_BF16", 1, 15.0, 0.1), (4000, 4, "DT_BF16", 1, 20.0, 0.1)]
# Hidden 2000: the pair (1000, 10)-(3000, 15) gives 12.5 -> 1.5/14 = 10.714 %.
# Hidden 3000: the pair (2000, 14)-(4000, 20) gives 17.0 -> 2/15 = 13.333 %.
LOCAL = (1.5 / 14 * 100, 2 / 15 * 100)
# Nearest by log size: 2000 -> 3000 (ratio 1.5 < 2) = 15 -> 7.143 %; 3000 -> 4000 = 20 -> 33.3 %.
NEAREST = (1 / 14 * 100, 5 / 15 * 100)
# Global least squares without 2000: x = 1000, 3000, 4000, y = 10, 15, 20: beta = 15000/4666667,
# alpha = 15 - beta * 2666.67 = 6.4286 -> 12.857 at 2000 (8.163 %); without 3000: x = 1000,
# 2000, 4000, y = 10, 14, 20: beta = 15333.3/4666667, alpha = 14.667 - 7.667 = 7.0
# -> 16.857 at 3000 (12.381 %).
GLOBAL = (8 / 7 / 14 * 100, 13 / 7 / 15 * 100)


def stats(pair):
    low, high = sorted(pair)
    return {"median": pytest.approx((low + high) / 2),
            "p90": pytest.approx(low + 0.9 * (high - low)), "max": pytest.approx(high)}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("comm_holdout")
    write_hccl(root / "data", "hcom_allReduce_", ROWS)
    write_version(root / "data", {"RmsNorm": [Row([[8, 16]], ["DT_BF16"], [[8, 16]],
                                                  ["DT_BF16"], 1.0)]},
                  mapping_doc({ALL_REDUCE: {"kernel_type": "hcom_allReduce_",
                                            "category": "communication"}},
                              communication_data_ref="../../hccl/v8.5/"))
    return root


def test_each_interior_size_is_predicted_from_the_others(data):
    with build_store(data) as store:
        report = run_holdout(store, "v0.18")
    collective, overall = report.communication
    assert (collective.collective, collective.groups, collective.sizes, collective.scored) == (
        "hcom_allReduce_", 1, 4, 2)
    assert collective.ape["local"] == stats(LOCAL)
    assert collective.ape["nearest"] == stats(NEAREST)
    assert collective.ape["global"] == stats(GLOBAL)
    assert overall.collective == "*" and overall.ape == collective.ape


def test_a_path_filter_other_than_communication_leaves_it_out(data):
    with build_store(data) as store:
        assert run_holdout(store, "v0.18", path="generic").communication == []
        assert len(run_holdout(store, "v0.18", path="communication").communication) == 2


def test_cli_json_carries_the_communication_section(data, capsys, tmp_path):
    db = build_database(tmp_path, data / "data")
    assert main(["holdout", "--db", db, "--version", "v0.18", "--path", "communication",
                 "--json"]) == 0
    section = json.loads(capsys.readouterr().out)["communication"]
    assert [c["collective"] for c in section] == ["hcom_allReduce_", "*"]
    assert section[0]["ape"]["local"]["max"] == pytest.approx(LOCAL[1])
