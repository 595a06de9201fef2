"""``--draws``: the multiplier of an answer in a draw, the report, and the command.

The multipliers are checked on the SQUARE fixture of tests/evaluation (tokens 10·x → x² us,
x = 3 measured twice: 8 and 10). Its error pools, by hand (tests/evaluation/
test_uncertainty.py): tokens 25 interpolates to 6.5 with the kernel-level leave-one-out
errors 0.25, 1/9, 1/16, so its multipliers 1 / (1 + r) are 0.8, 0.9 and 16/17; tokens 30
is measured twice (8 and 10, answer 9): 8/9 and 10/9; tokens 20 has one row (4 us) and
draws the version's duplicate noise -1/9, +1/9: again 8/9 and 10/9. The expected pick in
each draw follows the documented seed rule, written out here with hashlib and numpy.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from profstore.api import Store
from profstore.evaluation.uncertainty import ErrorModel
from profstore.evaluation.workload import load_workload, run_workload
from profstore.paths.base import regime_key
from profstore.tensorcast import draws
from profstore.tensorcast.draw_report import NO_WINNER, build_report
from profstore.tensorcast.draw_spec import DrawSpec, FallbackErrors
from profstore.tensorcast.drawn_source import ModelRecord, OpRecord
from profstore.tensorcast.ranking import Ranked, matches

from tests.support.evaluation import RMS_OP, SQUARE, UNVERIFIED, write_rms
from tests.support.perfdb import build_store
from tests.tensorcast.cli_runs import best, copy_model, profstore
from tests.tensorcast.simulation import require_tensor_cast

SEED = 11


def rule_pick(seed: int, index: int, ident: list, size: int) -> int:
    """The documented seed rule, independently: sha256 of the compact JSON, 8 bytes."""
    text = json.dumps([seed, index, ident], separators=(",", ":"))
    number = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return int(np.random.default_rng(number).integers(0, size))


@pytest.fixture()
def square(tmp_path):
    write_rms(tmp_path / "data", SQUARE, **UNVERIFIED)
    with build_store(tmp_path) as store:
        yield store


def answer(store: Store, tokens: int):
    trace = {"model": "fixture", "scenario": "decode", "ops": [{
        "op_name": RMS_OP, "count": 1, "shape_variants": [{
            "input_shapes": [f"({tokens}, 7168)", "(7168)"], "input_dtypes": ["float16"] * 2,
            "output_shapes": [f"({tokens}, 7168)"], "output_dtypes": ["float16"]}]}]}
    (found,) = run_workload(store, load_workload(trace), "v0.18").answers
    return found.result


def drawn(store: Store, result, index: int) -> float:
    ident = draws.identity(result)
    dist = draws.distribution(result, ErrorModel(store, "v0.18"))
    return draws.multiplier(dist, DrawSpec(SEED, index), ident)


def test_an_interpolated_answer_draws_its_holdout_errors(square):
    result = answer(square, 25)
    assert result.latency_us == pytest.approx(6.5)
    d = result.details
    ident = ["interpolated", "RmsNorm", d["path"], regime_key(d["target_regime"]), 1,
             sorted(d["axes"].items())]
    pool = [0.8, 0.9, 16 / 17]  # 1 / 1.25, 1 / (1 + 1/9), 1 / (1 + 1/16), ascending
    for index in range(8):
        expected = pool[rule_pick(SEED, index, json.loads(json.dumps(ident)), 3)]
        assert drawn(square, result, index) == pytest.approx(expected)
    assert len({round(drawn(square, result, i), 9) for i in range(8)}) > 1


def test_measured_answers_draw_their_rows_or_their_noise(square):
    for tokens in (30, 20):  # duplicates 8 and 10 around 9; one row, noise -1/9, +1/9
        result = answer(square, tokens)
        rows = sorted([m["file"], m["line"]] for m in result.details["matched_rows"])
        ident = ["measured", "RmsNorm", result.details["method"], rows]
        for index in range(6):
            expected = [8 / 9, 10 / 9][rule_pick(SEED, index, ident, 2)]
            assert drawn(square, result, index) == pytest.approx(expected)


def test_the_nominal_search_and_answers_without_errors_are_not_moved(square):
    result = answer(square, 25)
    dist = draws.distribution(result, ErrorModel(square, "v0.18"))
    assert draws.multiplier(dist, DrawSpec(SEED, None), draws.identity(result)) == 1.0
    empty = draws.Distribution("none", "", ())
    assert draws.multiplier(empty, DrawSpec(SEED, 3), ["x"]) == 1.0
    assert draws.fallback_multiplier(DrawSpec(SEED, 3), "key", "MatMulV2") == 1.0


def test_a_fallback_draws_log_normal_with_the_given_error():
    for index in range(5):
        text = json.dumps([SEED, index, ["fallback", "aten.mm|4x4"]], separators=(",", ":"))
        number = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        z = np.random.default_rng(number).standard_normal()
        stated = DrawSpec(SEED, index, FallbackErrors.of(0.2))
        assert draws.fallback_multiplier(stated, "aten.mm|4x4", "MatMulV2") == (
            pytest.approx(1.2 ** z))
    # Var of exp(sigma z), sigma = ln 1.2
    s2 = math.log(1.2) ** 2
    assert draws.fallback_error(FallbackErrors.of(0.2), "MatMulV2") == (
        "stated", pytest.approx((math.exp(s2) - 1) * math.exp(s2)))


@pytest.mark.parametrize("bad", [-0.2, math.nan, math.inf])
def test_a_bad_fallback_error_is_refused(bad):
    with pytest.raises(ValueError, match="--fallback-error"):
        DrawSpec(0, 0, FallbackErrors.of(bad))


# --- the report -----------------------------------------------------------------------

A, B = "TP=4 | PP=1 | DP=2", "TP=8 | PP=1 | DP=1"


def table(*rows: tuple[str, float]) -> list[Ranked]:
    return [Ranked(label, tps, 32) for label, tps in rows]


def record(tp: int, dp: int, *ops: OpRecord) -> ModelRecord:
    config = {"TP": tp, "PP": 1, "DP": dp, "EP": 1, "MOE-TP": tp, "MOE-DP": 1, "MTP": 0}
    return ModelRecord(config, {str(i): op for i, op in enumerate(ops)})


def test_the_report_counts_winners_and_calls_the_choice_robust_or_not():
    nominal = table((A, 100.0), (B, 90.0))
    drawn = [table((A, 95.0), (B, 90.0)), table((B, 99.0), (A, 98.0)), table((A, 104.0)),
             table((A, 101.0)), []]
    models = [record(4, 2, OpRecord("mm", "MatMul", "INTERPOLATED", "regime", 10.0, 1.0,
                                    0.04, calls=3),
                     OpRecord("add", "Add", "MEASURED", "kernel_duplicates", 2.0, 1.0,
                              0.01, calls=10),
                     OpRecord("pow", "", "ANALYTIC", "none", 5.0, 1.0, 0.0, calls=2)),
              record(8, 1, OpRecord("pow", "", "ANALYTIC", "none", 50.0, 1.0, 0.0, calls=1))]
    report = build_report(5, 3, FallbackErrors("none"), nominal, drawn, models, 1.0, 5.0)
    assert report.winners == {A: 3, B: 1, NO_WINNER: 1}
    assert report.runner_up == Ranked(B, 90.0, 32)
    assert sum(report.winners.values()) == 5
    assert report.robust is False  # 3 of 5 < 80 %
    assert (report.p10, report.p90) == (pytest.approx(38.0), pytest.approx(102.8))
    # A's time: mm 30, add 20, pow 10 (analytic) of 60; both models: 60 of 110
    assert report.winner_fallback_time_share == pytest.approx(10 / 60)
    assert report.fallback_time_share == pytest.approx(60 / 110)
    # variance: mm 30² · 0.04 = 36, add 20² · 0.01 = 4
    assert [(o.op, o.variance_share) for o in report.variance_ops] == [
        ("mm", pytest.approx(0.9)), ("add", pytest.approx(0.1))]
    again = build_report(5, 3, FallbackErrors("none"), nominal,
                         [table((A, 1.0))] * 4 + [table((B, 1.0))], models, 1.0, 5.0)
    assert again.robust is True  # 4 of 5


def test_a_label_names_its_configuration():
    config = record(4, 2).config
    assert matches(A, config) and not matches(B, config)
    assert matches("TP=4 | PP=1 | DP=2 | EP=1 | MOE-TP=4 | MOE-DP=1", config)
    assert not matches("TP=4 | PP=1 | DP=2 | EP=8 | MOE-TP=1 | MOE-DP=1", config)
    assert not matches("TP=4 | PP=1 | DP=2", {**config, "MTP": 1})


# --- the command (upstream's search, for real) -------------------------------------------

SMALL = ["--device", "ATLAS_800_A3_752T_128G_DIE", "--num-devices", "8", "--input-length",
         "1024", "--output-length", "256", "--tp-sizes", "4", "8", "--tpot-limit", "50",
         "--batch-range", "48", "64", "-j", "2"]


def search_with_draws(perfdb_path, model_dir, out, *options: str):
    stats = out / "stats.json"
    run = profstore("tensorcast", "throughput-optimizer", "--db", perfdb_path, "--version",
                    "v0.18", "--stats-json", str(stats), *options, "--", str(model_dir),
                    *SMALL)
    assert run.returncode == 0, run.stderr[-3000:]
    return run, json.loads(stats.read_text())


@pytest.fixture(scope="module")
def two_searches(perfdb_path, tmp_path_factory):
    require_tensor_cast()
    model = copy_model("qwen3_dense_32b", tmp_path_factory.mktemp("models"))
    return [search_with_draws(perfdb_path, model, tmp_path_factory.mktemp("draws"),
                              "--draws", "3", "--seed", "5") for _ in range(2)]


@pytest.mark.requires_perfdb
@pytest.mark.sqlite_only  # the search on a server: test_commands.py
def test_draws_are_deterministic_for_a_seed_and_differ_from_each_other(two_searches):
    (first_run, first), (_, second) = two_searches
    assert first["draws"] == {**second["draws"], "nominal_seconds": first["draws"][
        "nominal_seconds"], "draw_seconds": first["draws"]["draw_seconds"]}
    data = first["draws"]
    assert (data["k"], data["seed"]) == (3, 5)
    assert sum(data["winners"].values()) == 3
    # the nominal best is upstream's Top 1 row, as printed
    throughput, label, _ = best(first_run.stdout)
    assert (data["nominal_best"], data["nominal_best_throughput"]) == (
        label, pytest.approx(throughput, abs=0.01))
    tops = data["best_throughputs"]
    assert len(set(tops)) == 3 and throughput not in tops
    assert data["best_throughput_p10"] <= data["best_throughput_p90"]
    assert data["robust"] == (data["winners"].get(label, 0) >= 0.8 * 3)
    assert "the nominal best wins" in first_run.stderr
    assert data["variance_ops"] and 0 < data["fallback_time_share"] < 1
    # by default every analytic fallback draws its class's error from the analytic check
    fallback = data["fallback_error"]
    assert fallback["source"] == "calibration" and fallback["pooled_ops"] > 0
    assert 0 < fallback["winner_variance_share"] < 1
    assert {entry["from"] for entry in fallback["classes"].values()} <= {"class", "pooled"}
    assert "fallback errors from the analytic check" in first_run.stderr


@pytest.mark.requires_perfdb
@pytest.mark.sqlite_only  # the search on a server: test_commands.py
@pytest.mark.parametrize(("words", "message"), [
    (["throughput-optimizer", "--draws", "0"], "--draws must be a positive number"),
    (["throughput-optimizer", "--draws", "-2"], "--draws must be a positive number"),
    (["text-generate", "--draws", "3"], "--draws goes with throughput-optimizer"),
    (["throughput-optimizer", "--draws", "3", "--fallback-error", "-0.2"], "--fallback-error"),
    (["throughput-optimizer", "--draws", "3", "--fallback-error", "nan"], "--fallback-error"),
    (["throughput-optimizer", "--fallback-error", "0.2"], "--fallback-error goes with --draws"),
    (["throughput-optimizer", "--draws", "2", "--", "MODEL", "--disagg"], "--disagg"),
])
def test_bad_draw_options_are_one_line_and_write_nothing(perfdb_path, tmp_path, words,
                                                         message):
    tail = [] if "--" in words else ["--", "MODEL"]
    run = profstore("tensorcast", words[0], "--db", perfdb_path, "--version", "v0.18",
                    "--stats-json", str(tmp_path / "stats.json"), *words[1:], *tail,
                    cwd=tmp_path)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profstore: error: ") and message in lines[0]
    assert list(tmp_path.iterdir()) == []
