"""The replay interval: hold-out errors per answer, Monte Carlo bounds, the cache, and
the calibration loop.

SQUARE fixture (tokens 10·x → x² us, x = 3 measured twice: 8 and 10, median 9). Its
leave-one-out errors ``predicted / truth - 1`` at the interior coordinates are
x = 2: (1 + 9) / 2 = 5 vs 4 → 0.25; x = 3: (4 + 16) / 2 = 10 vs 9 → 1/9;
x = 4: (9 + 25) / 2 = 17 vs 16 → 1/16. Three errors: fewer than MIN_POINTS (5), so an
answer draws from the kernel level. Tokens 25 interpolates to (4 + 9) / 2 = 6.5; its
possible truths are 6.5 / 1.25 = 5.2, 6.5 / (10/9) = 5.85 and 6.5 / (17/16) = 104/17,
each with probability 1/3, so p10 is the lowest and p90 the highest of them.
"""

from __future__ import annotations

import json

import pytest
from profstore.cli.main import main
from profstore.evaluation import uncertainty
from profstore.evaluation.calibration import calibrate, run_trial
from profstore.evaluation.uncertainty import ErrorModel, OpError, interval, op_errors
from profstore.evaluation.workload import load_workload, run_workload

from tests.support.evaluation import RMS_OP

LOWEST, MIDDLE, HIGHEST = 5.2, 5.85, 104 / 17


def trace(*tokens_calls: tuple[int, int]) -> dict:
    ops = [{"op_name": RMS_OP, "count": calls, "shape_variants": [
        {"input_shapes": [f"({tokens}, 7168)", "(7168)"], "input_dtypes": ["float16"] * 2,
         "output_shapes": [f"({tokens}, 7168)"], "output_dtypes": ["float16"]}]}
        for tokens, calls in tokens_calls]
    return {"model": "fixture", "scenario": "decode", "ops": ops}


def errors_of(store, workload: dict, cache=None) -> list[OpError]:
    run = run_workload(store, load_workload(workload), "v0.18")
    return op_errors(run.answers, ErrorModel(store, "v0.18", cache))


def test_interpolated_answer_draws_the_holdout_errors(square_store):
    (error,) = errors_of(square_store, trace((25, 2)))
    assert (error.kind, error.level, error.latency_us) == ("interpolation", "kernel",
                                                         pytest.approx(6.5))
    assert sorted(error.values) == pytest.approx([1 / 16, 1 / 9, 0.25])
    found = interval([error])
    assert found.total_us == pytest.approx(13.0)
    for bounds in (found.independent, found.correlated):
        assert (bounds.p10, bounds.p90) == (pytest.approx(2 * LOWEST), pytest.approx(2 * HIGHEST))
    assert found.dominant[0]["variance_share"] == pytest.approx(1.0)


def test_measured_duplicates_carry_their_spread(square_store):
    (error,) = errors_of(square_store, trace((30, 1)))
    assert (error.source, error.kind, sorted(error.values)) == ("MEASURED", "duplicates",
                                                               [8.0, 10.0])
    found = interval([error])
    assert (found.total_us, found.independent.p10, found.independent.p90) == (9.0, 8.0, 10.0)
    (single,) = errors_of(square_store, trace((20, 1)))
    # one row: the noise of the version's duplicates, 8 and 10 around 9 -> -1/9, +1/9
    assert (single.kind, single.level) == ("repeatability", "version_duplicates")
    assert sorted(single.values) == pytest.approx([-1 / 9, 1 / 9])
    bounds = interval([single]).correlated
    assert (bounds.p10, bounds.p90) == (pytest.approx(32 / 9), pytest.approx(40 / 9))


def test_correlated_bounds_are_wider_than_independent(square_store):
    errors = errors_of(square_store, trace((25, 1))) * 3
    found = interval(errors)
    assert (found.correlated.p10, found.correlated.p90) == (pytest.approx(3 * LOWEST),
                                                            pytest.approx(3 * HIGHEST))
    # all three at their lowest truth together has probability 1/27 < 10 %
    assert found.independent.p10 > found.correlated.p10 + 0.1
    assert found.independent.p90 < found.correlated.p90 - 0.1
    assert found.independent.p10 == pytest.approx(2 * LOWEST + MIDDLE)


def test_misses_are_left_out(square_store):
    errors = errors_of(square_store, trace((25, 1), (500, 4)))
    assert [e.calls for e in errors] == [1]


def test_error_model_is_cached_per_version(square_store, tmp_path, monkeypatch):
    first = errors_of(square_store, trace((25, 2)), tmp_path)
    (cached,) = list(tmp_path.glob("errors-*.json"))
    assert json.loads(cached.read_text())["version"] == "v0.18"

    def refuse(*args, **kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(uncertainty, "run_holdout", refuse)
    again = errors_of(square_store, trace((25, 2)), tmp_path)
    assert again[0].values == first[0].values


def test_replay_interval_cli(square_db, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(trace((25, 2), (30, 1))))
    assert main(["replay", str(workload), "--db", square_db, "--version", "v0.18",
                 "--interval", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["interval"]
    assert data["total_us"] == pytest.approx(22.0)
    assert data["correlated"]["p10"] == pytest.approx(2 * LOWEST + 8.0)
    assert data["correlated"]["p90"] == pytest.approx(2 * HIGHEST + 10.0)
    assert data["levels"] == {"kernel": 1, "coordinate": 1}
    assert main(["replay", str(workload), "--db", square_db, "--version", "v0.18",
                 "--interval"]) == 0
    assert "ops that dominate the uncertainty" in capsys.readouterr().out


def test_calibration_hides_rows_and_scores_the_interval(square_store):
    workload = load_workload(trace((20, 1), (30, 1), (40, 1)))
    result = calibrate(square_store, workload, "v0.18", share=0.3, trials=6, draws=500)
    assert len(result.trials) == 6
    assert all(t.hidden_rows == 2 for t in result.trials)  # 30 % of 6 rows
    for t in result.trials:
        assert t.inside_correlated == (t.correlated[0] <= t.truth_us <= t.correlated[1])
    used = result.informative
    assert result.coverage("correlated") == (
        sum(t.inside_correlated for t in used) / len(used) if used else None)
    with pytest.raises(ValueError, match="share must be between 0 and 1"):
        calibrate(square_store, workload, "v0.18", share=1.5)


def test_draws_must_be_positive():
    with pytest.raises(ValueError, match="draws must be positive"):
        interval([], draws=0)


def test_trial_with_the_duplicated_coordinate_hidden(square_store):
    """Hiding both tokens-30 rows: 30 interpolates to (4 + 16) / 2 = 10, its truths are
    10 / 1.25 = 8, 9 and 10 / (17/16) = 160/17; 20 (4) and 40 (16) stay measured, single
    rows with the duplicates' noise ±1/9 (the hidden pair still defines it: the noise
    comes from the full version). Fully correlated: [4·8/9 + 16·8/9 + 8,
    4·10/9 + 16·10/9 + 160/17]; the full-data truth 4 + 9 + 16 = 29 lies inside."""
    from profstore.storage import schema as t
    from sqlalchemy import select

    with square_store.engine.connect() as conn:
        hidden = frozenset(conn.execute(select(t.sample.c.id).where(
            t.sample.c.line_no.in_([4, 5]))).scalars())
    workload = load_workload(trace((20, 1), (30, 1), (40, 1)))
    full = run_workload(square_store, workload, "v0.18")
    result = run_trial(square_store, workload, full, ErrorModel(square_store, "v0.18"),
                       hidden, 0, 2000)
    assert (result.hidden_rows, result.common_variants, result.interpolated_variants) == (
        2, 3, 1)
    assert result.truth_us == pytest.approx(29.0)
    assert result.total_us == pytest.approx(30.0)
    assert result.correlated == (pytest.approx(160 / 9 + 8), pytest.approx(200 / 9 + 160 / 17))
    assert result.inside_correlated and result.inside_independent


def test_calibrate_cli(square_db, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(trace((20, 1), (30, 1), (40, 1))))
    base = ["calibrate", str(workload), "--db", square_db, "--version", "v0.18"]
    assert main([*base, "--trials", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (len(data["trials"]), data["share"]) == (3, 0.2)
    assert main([*base, "--share", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "share must be between 0 and 1" in err
