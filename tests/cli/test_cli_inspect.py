"""Inspection verbs on the fixture database: exact JSON content, tables, user errors, and
the read-only guard of ``profstore sql``."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import nullcontext
from datetime import datetime

import pytest
from profstore.cli.main import main
from profstore.storage import sql_door
from profstore.storage.engines import make_engine
from profstore.storage.sql_door import Limits, ReadOnlyViolation, check_statement, guarded
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.support.cli_fixture import add_text, fixture_kernels
from tests.support.perfdb import DEVICE, V18_DIR, csv_text


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


def data_lines(text: str) -> int:
    """Data rows of a CSV text, counted without the ingest code: non-blank lines − header."""
    return sum(1 for line in text.splitlines() if line.strip()) - 1


def test_versions_json_contract(capsys, fixture_db):
    [version] = run_json(capsys, "versions", "--db", fixture_db)
    ingested_at, content_hash = version.pop("ingested_at"), version.pop("content_hash")
    assert version == {
        "alias": "v0.18", "directory": V18_DIR, "device": DEVICE, "framework": "vllm_ascend",
        "files": 3, "rows_read": 12, "rows_accepted": 10, "rows_rejected": 2,
    }
    assert datetime.fromisoformat(ingested_at).tzinfo is not None
    assert re.fullmatch(r"[0-9a-f]{64}", content_hash)


def test_kernels_json_counts_data_rows(capsys, fixture_db):
    rows = run_json(capsys, "kernels", "--db", fixture_db, "--version", "v0.18")
    texts = {k: v if isinstance(v, str) else csv_text(v) for k, v in fixture_kernels().items()}
    assert {k: data_lines(t) for k, t in texts.items()} == {"RmsNorm": 8, "Add": 3, "Range": 1}
    assert rows == [
        {"kernel_type": "Add", "file": "Add.csv", "rows_read": 3, "rows_accepted": 2,
         "rows_rejected": 1, "refusal": None},
        {"kernel_type": "Range", "file": "Range.csv", "rows_read": 1, "rows_accepted": 1,
         "rows_rejected": 0, "refusal": None},
        {"kernel_type": "RmsNorm", "file": "RmsNorm.csv", "rows_read": 8, "rows_accepted": 7,
         "rows_rejected": 1, "refusal": None},
    ]
    for row in rows:
        assert row["rows_read"] == data_lines(texts[row["kernel_type"]])
        assert row["rows_read"] == row["rows_accepted"] + row["rows_rejected"]


def test_kernels_accepts_the_directory_name(capsys, fixture_db):
    rows = run_json(capsys, "kernels", "--db", fixture_db, "--version", V18_DIR)
    assert [r["kernel_type"] for r in rows] == ["Add", "Range", "RmsNorm"]


def test_regimes_points_and_axis_ranges(capsys, fixture_db):
    rows = run_json(capsys, "regimes", "--db", fixture_db, "--version", "v0.18",
                    "--kernel", "RmsNorm", "--path", "generic")
    summary = [(json.loads(r["regime"])["shape_signature"], r["points"], r["latency_columns"],
                r["axes"]) for r in rows]
    assert summary == [
        ("T,4096;4096", 2, 1, [{"name": "axis_0", "min": 8.0, "max": 32.0}]),
        ("T,7168;7168", 5, 1, [{"name": "axis_0", "min": 8.0, "max": 64.0}]),
    ]
    assert {(r["kernel"], r["path"]) for r in rows} == {("RmsNorm", "generic")}
    assert all(json.loads(r["regime"])["kernel"] == "RmsNorm" for r in rows)


def test_regimes_filters(capsys, fixture_db):
    assert run_json(capsys, "regimes", "--db", fixture_db, "--version", "v0.18",
                    "--path", "no_such_path") == []
    rows = run_json(capsys, "regimes", "--db", fixture_db, "--version", "v0.18",
                    "--kernel", "Range")
    assert rows == []


def test_regimes_table(capsys, fixture_db):
    code, out, _ = run(capsys, "regimes", "--db", fixture_db, "--version", "v0.18",
                       "--kernel", "RmsNorm", "--path", "generic")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["KERNEL", "PATH", "POINTS", "COLUMNS", "AXES", "REGIME"]
    assert lines[1].split()[:5] == ["RmsNorm", "generic", "2", "1", "axis_0=8..32"]
    assert lines[2].split()[:5] == ["RmsNorm", "generic", "5", "1", "axis_0=8..64"]


def test_duplicates_count_and_spread(capsys, fixture_db):
    rows = run_json(capsys, "duplicates", "--db", fixture_db, "--version", "v0.18",
                    "--kernel", "RmsNorm")
    [dup] = [r for r in rows if r["path"] == "generic"]
    assert json.loads(dup.pop("regime"))["shape_signature"] == "T,7168;7168"
    assert dup == {"kernel": "RmsNorm", "path": "generic", "coordinate": [64.0],
                   "latency_column": "Average Duration(us)", "count": 3, "latency_min": 30.0,
                   "latency_median": 32.5, "latency_max": 34.0, "first_line": 4}


def test_duplicates_table_names_the_axis(capsys, fixture_db):
    code, out, _ = run(capsys, "duplicates", "--db", fixture_db, "--version", "v0.18",
                       "--kernel", "RmsNorm")
    row = next(line for line in out.splitlines() if "axis_0=64" in line)
    assert code == 0
    assert row.split()[:8] == ["RmsNorm", "generic", "axis_0=64", "3", "30", "32.5", "34", "4"]


def test_rejected_counts_samples_and_path_refusals(capsys, fixture_db):
    report = run_json(capsys, "rejected", "--db", fixture_db, "--version", "v0.18")
    assert report["counts"] == [
        {"reason_code": "column_count", "file": "Add.csv", "count": 1},
        {"reason_code": "latency_invalid", "file": "RmsNorm.csv", "count": 1},
    ]
    broken_add = add_text().splitlines()[-1]
    nan_rms = csv_text(fixture_kernels()["RmsNorm"]).splitlines()[6]
    assert [(s["file"], s["line"], s["reason_code"], s["raw_text"])
            for s in report["samples"]] == [
        ("Add.csv", 4, "column_count", broken_add),
        ("RmsNorm.csv", 7, "latency_invalid", nan_rms),
    ]
    assert report["samples"][0]["reason"] == "expected 9 columns, got 8"
    assert report["path_refusals"] == [
        {"kernel": "Range", "path": "generic", "reason": "target_unavailable", "count": 1,
         "example": "row has no input tensors"},
    ]


def test_rejected_limit(capsys, fixture_db):
    report = run_json(capsys, "rejected", "--db", fixture_db, "--version", "v0.18",
                      "--limit", "1")
    assert [s["file"] for s in report["samples"]] == ["Add.csv"]
    assert sum(c["count"] for c in report["counts"]) == 2


def test_rejected_table_has_three_sections(capsys, fixture_db):
    code, out, _ = run(capsys, "rejected", "--db", fixture_db, "--version", "v0.18")
    assert code == 0
    titles = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert titles == ["rejected rows by reason and file:", "sample rejected rows (up to 20):",
                      "rows refused by a path (still samples for other paths):"]


def test_sql_select_with_bound_parameter(capsys, fixture_db):
    rows = run_json(capsys, "sql", "--db", fixture_db,
                    "SELECT kernel_type, rows_read FROM kernel_file WHERE kernel_type = :k",
                    "--param", "k=RmsNorm")
    assert rows == [{"kernel_type": "RmsNorm", "rows_read": 8}]


def test_sql_parameter_is_never_formatted_into_the_query(capsys, fixture_db):
    rows = run_json(capsys, "sql", "--db", fixture_db,
                    "SELECT count(*) AS n FROM kernel_file WHERE kernel_type = :k",
                    "--param", "k=x' OR '1'='1")
    assert rows == [{"n": 0}]


def test_sql_table_output(capsys, fixture_db):
    code, out, _ = run(capsys, "sql", "--db", fixture_db,
                       "SELECT alias, files FROM profile_set")
    assert code == 0
    assert out.splitlines() == ["alias  files", "v0.18      3"]


@pytest.mark.parametrize("statement", [
    "INSERT INTO profile_set (alias) VALUES ('x')",
    "DELETE FROM sample",
    "DROP TABLE sample",
    "ATTACH DATABASE 'other.db' AS other",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA user_version(7)",
    "SELECT 1; DELETE FROM sample",
    "WITH gone AS (SELECT id FROM sample) DELETE FROM sample WHERE id IN gone",
    "UPDATE sample SET latency_us = 0",
])
@pytest.mark.sqlite_only
def test_sql_refuses_writes(capsys, fixture_db, statement):
    code, out, err = run(capsys, "sql", "--db", fixture_db, statement)
    assert code == 1
    assert out == ""
    assert err.startswith("profstore: error: profstore sql is read-only: ")
    assert err.count("\n") == 1
    with sqlite3.connect(fixture_db) as conn:
        assert conn.execute("SELECT count(*) FROM sample").fetchone() == (10,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.sqlite_only
def test_sql_connection_is_read_only_even_without_the_guard(capsys, fixture_db,
                                                            monkeypatch):
    monkeypatch.setattr(sql_door, "check_statement", lambda sql, dialect: None)
    monkeypatch.setattr(sql_door, "guarded", lambda conn, limits: nullcontext())
    code, _, err = run(capsys, "sql", "--db", fixture_db, "DELETE FROM rejected_row")
    assert code == 1
    assert "readonly database" in err
    with sqlite3.connect(fixture_db) as conn:
        assert conn.execute("SELECT count(*) FROM rejected_row").fetchone() == (2,)


@pytest.mark.sqlite_only
def test_sql_database_error_is_one_line(capsys, fixture_db):
    code, _, err = run(capsys, "sql", "--db", fixture_db, "SELECT * FROM no_such_table")
    assert code == 1
    assert err == "profstore: error: database error: no such table: no_such_table\n"


@pytest.mark.parametrize(("statement", "allowed"), [
    ("SELECT 1", True),
    ("  -- a comment\n select 1 ;", True),
    ("WITH x AS (SELECT 1) SELECT * FROM x", True),
    ("EXPLAIN QUERY PLAN SELECT * FROM sample", True),
    ("PRAGMA table_info(sample)", True),
    ("PRAGMA main.index_list('sample')", True),
    ("PRAGMA journal_mode", True),
    ("VALUES (1), (2)", True),
    ("SELECT 'drop table x' AS \"delete\"", True),
    ("SELECT replace(raw_text, 'a', 'b') FROM sample", True),
    ("", False),
    ("EXPLAIN DELETE FROM sample", False),
    ("WITH x AS (DELETE FROM t RETURNING id) SELECT * FROM x", False),
    ("PRAGMA optimize", False),
    ("PRAGMA journal_mode(WAL)", False),
    ("VACUUM", False),
    ("DETACH other", False),
    ("BEGIN", False),
    ("SELECT * FROM sample FOR UPDATE", False),
])
@pytest.mark.sqlite_only
def test_read_only_guard(fixture_db, statement, allowed):
    """Allowed statements run under the door; refused ones raise before they run (a
    refusal by the authorizer, or SQLite refusing to prepare the text at all)."""
    engine = make_engine(fixture_db, read_only=True)
    try:
        with engine.connect() as conn:
            def execute() -> None:
                check_statement(statement, "sqlite")
                with guarded(conn, Limits()):
                    conn.execute(text(statement)).fetchall()
            if allowed:
                execute()
            else:
                with pytest.raises((ReadOnlyViolation, DBAPIError)):
                    execute()
    finally:
        engine.dispose()


def test_unknown_version_is_one_line(capsys, fixture_db):
    code, out, err = run(capsys, "kernels", "--db", fixture_db, "--version", "v9.9")
    assert (code, out) == (1, "")
    assert err == "profstore: error: unknown version 'v9.9' (ingested: v0.18)\n"


def test_missing_database_file(capsys, tmp_path):
    missing = tmp_path / "nothing.db"
    code, _, err = run(capsys, "versions", "--db", str(missing))
    assert code == 1
    assert err.startswith(f"profstore: error: no database at {missing}")
    assert not missing.exists()


def test_database_without_schema(capsys, tmp_path):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    code, _, err = run(capsys, "versions", "--db", str(empty))
    assert code == 1
    assert "has no profstore schema; run `profstore db upgrade` first" in err


def test_db_from_environment(capsys, fixture_db, monkeypatch):
    monkeypatch.setenv("PROFSTORE_DB", fixture_db)
    [version] = run_json(capsys, "versions")
    assert version["alias"] == "v0.18"


def test_versions_table(capsys, fixture_db):
    code, out, _ = run(capsys, "versions", "--db", fixture_db)
    header, row = out.splitlines()
    assert code == 0
    assert header.split()[:8] == ["ALIAS", "DIRECTORY", "DEVICE", "FRAMEWORK", "FILES",
                                  "READ", "ACCEPTED", "REJECTED"]
    assert row.split()[:8] == ["v0.18", V18_DIR, DEVICE, "vllm_ascend", "3", "12", "10", "2"]
