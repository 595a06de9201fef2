"""bench/tensorcast_report.py: medians over every run of a source, the ratios the issue's
targets are on, and the Markdown row that lists each run."""

from __future__ import annotations

import pytest

from bench.tensorcast_report import Run, markdown, summary

pytestmark = pytest.mark.no_database


def _dense_runs() -> dict[str, list[Run]]:
    return {
        "analytic": [Run(10.0, 8.0, 0.1), Run(12.0, 9.0, 0.2), Run(11.0, 10.0, 0.3)],
        "profstore": [Run(9.0, 6.0, 0.4, lookups={"share": 0.04}),
                      Run(9.9, 7.0, 0.5, lookups={"share": 0.03}),
                      Run(8.8, 5.0, 0.6, lookups={"share": 0.05})],
    }


def test_figures_are_medians_over_every_run_of_a_source():
    found = summary(_dense_runs())["sources"]
    # analytic: walls 10, 12, 11; completed 8, 9, 10; outside 2, 3, 1
    assert (found["analytic"]["wall_s"], found["analytic"]["completed_s"],
            found["analytic"]["outside_s"]) == (11.0, 9.0, 2.0)
    # profstore: walls 9.0, 9.9, 8.8; completed 6, 7, 5; outside 3.0, 2.9, 3.8
    assert found["profstore"]["wall_s"] == 9.0
    assert found["profstore"]["completed_s"] == 6.0
    assert found["profstore"]["outside_s"] == pytest.approx(3.0)
    assert found["profstore"]["lookups"] == {"share": 0.04}


def test_ratios_put_profstore_over_the_analytic_medians():
    ratios = summary(_dense_runs())["profstore"]
    assert ratios["wall_over_analytic"] == pytest.approx(9.0 / 11.0)
    assert ratios["completed_over_analytic"] == pytest.approx(6.0 / 9.0)
    assert ratios["outside_minus_analytic_s"] == pytest.approx(3.0 - 2.0)
    assert "wall_over_upstream" not in ratios


def test_a_command_without_a_search_has_no_time_outside_it():
    runs = {"analytic": [Run(8.0, None, 0.1), Run(9.0, None, 0.1), Run(8.5, None, 0.1)],
            "profstore": [Run(8.4, None, 0.1), Run(9.4, None, 0.1), Run(8.9, None, 0.1)]}
    found = summary(runs)
    assert found["sources"]["profstore"]["outside_s"] is None
    assert found["profstore"]["wall_over_analytic"] == pytest.approx(8.9 / 8.5)
    assert found["profstore"]["completed_over_analytic"] is None
    assert "outside_minus_analytic_s" not in found["profstore"]


def test_the_markdown_row_lists_each_run_of_a_repeated_scenario():
    runs = {source: [Run(r.wall_s, r.completed_s, r.load_before) for r in found]
            for source, found in _dense_runs().items()}
    report = {"commit": "abc1234", "cpus": 2, "scenarios": {"decode-step": {
        "command": "text-generate", "model": "m", "args": ["--decode"], "repeats": 3,
        "runs": {source: [{**vars(r), "outside_s": r.outside_s} for r in found]
                 for source, found in runs.items()},
        "summary": summary(runs)}}}
    text = markdown(report)
    assert "| profstore | 9.00 | 6.00 | 3.00 | 9.00 / 9.90 / 8.80 | 6.00 / 7.00 / 5.00 |" in text
    assert "each run: wall" in text


def test_profstore_is_also_put_over_the_frozen_analytic_command():
    runs = {**_dense_runs(), "analytic-frozen": [Run(8.0, 6.5, 0.1), Run(8.6, 7.0, 0.1),
                                                 Run(8.2, 6.0, 0.1)]}
    ratios = summary(runs)["profstore"]
    # analytic-frozen: walls 8.0, 8.6, 8.2 (median 8.2); completed median 6.5; outside 1.5,
    # 1.6, 2.2 (median 1.6); profstore: wall 9.0, completed 6.0, outside 3.0
    assert ratios["wall_over_analytic-frozen"] == pytest.approx(9.0 / 8.2)
    assert ratios["completed_over_analytic-frozen"] == pytest.approx(6.0 / 6.5)
    assert ratios["outside_minus_analytic_frozen_s"] == pytest.approx(3.0 - 1.6)
    assert ratios["outside_minus_analytic_s"] == pytest.approx(3.0 - 2.0)
