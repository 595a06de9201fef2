"""The evaluation verbs end to end through ``profstore``'s entry point."""

from __future__ import annotations

import io
import json

import pytest
from profstore.cli.main import main
from profstore.cli.output import ProgressBar

from tests.support.evaluation import TRACE

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture()
def trace_file(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json(capsys, square_db, trace_file):
    code, out, _ = run(capsys, "replay", trace_file, "--db", square_db, "--version", "v0.18",
                       "--json")
    data = json.loads(out)
    assert code == 0
    assert data["total_latency_us"] == pytest.approx(21.0)
    assert data["source_by_calls"] == {"MEASURED": 2, "INTERPOLATED": 2, "PARTIAL": 0,
                                       "miss": 5}
    assert "variants" not in data


def test_replay_table(capsys, square_db, trace_file):
    code, out, _ = run(capsys, "replay", trace_file, "--db", square_db, "--version", "v0.18")
    assert code == 0
    assert out.splitlines()[0] == ("fixture decode on v0.18: modelled latency 21.0 us over 9 "
                                   "calls (4 unique shapes, 2 ops)")
    assert "aten.nothing.default" in out.split("unmapped ops")[1]


def test_holdout_json_and_plot(capsys, square_db, tmp_path):
    target = tmp_path / "errors.png"
    code, out, _ = run(capsys, "holdout", "--db", square_db, "--version", "v0.18", "--json",
                       "--plot", target)
    (stats,) = json.loads(out)["paths"]
    assert code == 0
    assert (stats["eligible"], stats["answered"], stats["boundary"]) == (3, 3, 2)
    assert stats["ape"]["max"] == pytest.approx(25.0)
    assert target.read_bytes().startswith(PNG)


def test_plot_writes_a_png(capsys, square_db, tmp_path):
    target = tmp_path / "regime.png"
    code, out, _ = run(capsys, "plot", "--db", square_db, "--version", "v0.18", "--kernel",
                       "RmsNorm", "--regime", "1", "-o", target)
    assert code == 0
    data = target.read_bytes()
    assert data.startswith(PNG)
    assert len(data) > 10_000
    summary = json.loads(out)
    assert (summary["rank"], summary["points"], summary["varying_axes"]) == (1, 5, ["axis_0"])


def test_plot_unknown_regime_is_a_user_error(capsys, square_db, tmp_path):
    code, _, err = run(capsys, "plot", "--db", square_db, "--version", "v0.18", "--kernel",
                       "RmsNorm", "--regime", "7", "-o", tmp_path / "x.png")
    assert code == 1
    assert "no regime '7' for RmsNorm (use a rank 1..1" in err


def test_report_to_file(capsys, square_db, trace_file, tmp_path):
    target = tmp_path / "report.html"
    code, _, err = run(capsys, "report", "--db", square_db, "--version", "v0.18", "--workload",
                       trace_file, "--format", "html", "-o", target)
    text = target.read_text()
    assert code == 0
    assert f"wrote {target}" in err
    assert "<h2>Unverified scope</h2>" in text
    assert "<td>DynamicBlockQuant</td>" in text
    assert text.count("data:image/png;base64,") == 2


def test_progress_draws_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown, hidden = Tty(), io.StringIO()
    for stream in (shown, hidden):
        bar = ProgressBar("replay", "shapes", stream)
        bar(1, 2)
        bar(2, 2)
        bar(1, 3, "hold-out")
        bar(3, 3, "hold-out")
    drawn = shown.getvalue()
    assert "replay: 100%" in drawn and "2/2 [" in drawn
    assert "hold-out: 100%" in drawn and "3/3 [" in drawn
    assert drawn.count("\n") == 2
    assert hidden.getvalue() == ""
