"""bench.bench_ingest on a small fixture: per-version figures and the JSON report."""

from __future__ import annotations

import json

import pytest

from bench.bench_ingest import main
from tests.support.perfdb import Row, write_hccl, write_version


@pytest.mark.sqlite_only
@pytest.mark.bench
def test_bench_reports_each_version_and_the_database_size(tmp_path, capsys):
    root = tmp_path / "data"
    rows = [Row([[n, 64]], ["FLOAT"], [[n, 64]], ["FLOAT"], float(n)) for n in (1, 2, 4)]
    write_version(root, {"Cast": rows, "Bad": "not,a,header\n1,2\n"})
    write_hccl(root, "hcom_allReduce_", [(1024, 8, "DT_BF16", "intra_node", 12.5, 0.08)])
    report = tmp_path / "bench.json"
    assert main(["--root", str(root), "--json", str(report)]) == 0
    figures = json.loads(report.read_text())
    assert [(v["alias"], v["rows_read"], v["rows_accepted"], v["rows_rejected"])
            for v in figures["versions"]] == [("v0.18", 4, 3, 1), ("hccl-v8.5", 1, 1, 0)]
    assert figures["db_bytes"] > 0
    assert figures["wall_s"] >= max(v["wall_s"] for v in figures["versions"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["v0.18", "hccl-v8.5", "total"]
    assert lines[-1].startswith("database: ")


@pytest.mark.no_database
def test_bench_refuses_a_missing_root(tmp_path, capsys):
    assert main(["--root", str(tmp_path / "absent")]) == 2
    assert "no corpus at" in capsys.readouterr().err
