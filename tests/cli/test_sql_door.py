"""Issue #16 item 10: what ``profstore sql`` refuses beyond writes (SQLite's authorizer
decides), its statement time limit and ``--max-rows``."""

from __future__ import annotations

import json

import pytest
from profstore.cli.main import main

pytestmark = pytest.mark.sqlite_only
FOREVER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("statement", "reason"), [
    ("SELECT fts3_tokenizer('simple', x'4141414141414141')",
     "function fts3_tokenizer() is not allowed"),
    ("SELECT fts3_tokenizer('simple')", "function fts3_tokenizer() is not allowed"),
    ("SELECT load_extension('/tmp/evil.so')", "function load_extension() is not allowed"),
    ("SELECT sqlite_compileoption_get(0)", "function sqlite_compileoption_get() is not allowed"),
    ("SELECT count(*) FROM sample WHERE load_extension(raw_text) IS NULL",
     "function load_extension() is not allowed"),
])
def test_functions_off_the_allow_list_are_refused(capsys, fixture_db, statement, reason):
    code, out, err = run(capsys, "sql", "--db", fixture_db, statement)
    assert (code, out) == (1, "")
    assert err == f"profstore: error: profstore sql is read-only: {reason}\n"


def test_readfile_and_writefile_do_not_run(capsys, fixture_db, tmp_path):
    target = tmp_path / "written"
    for statement in ("SELECT readfile('/etc/hostname')",
                      f"SELECT writefile('{target}', 'x')"):
        code, out, err = run(capsys, "sql", "--db", fixture_db, statement)
        assert (code, out) == (1, "")
        assert err.startswith("profstore: error: ") and err.count("\n") == 1
    assert not target.exists()


def test_a_huge_zeroblob_is_one_line_and_a_small_one_runs(capsys, fixture_db):
    code, out, err = run(capsys, "sql", "--db", fixture_db, "SELECT length(zeroblob(5e8))")
    assert (code, out) == (1, "")
    assert err == "profstore: error: database error: string or blob too big\n"
    code, out, _ = run(capsys, "sql", "--db", fixture_db, "--json",
                       "SELECT length(zeroblob(1000)) AS n")
    assert (code, json.loads(out)) == (0, [{"n": 1000}])


def test_a_statement_past_the_time_limit_is_stopped(capsys, fixture_db):
    code, out, err = run(capsys, "sql", "--db", fixture_db, "--timeout", "0.5", FOREVER)
    assert (code, out) == (1, "")
    assert err == ("profstore: error: statement stopped after 0.5 s (--timeout SECONDS raises "
                   "the limit)\n")


def test_max_rows_cuts_the_output_and_says_so(capsys, fixture_db):
    code, out, err = run(capsys, "sql", "--db", fixture_db, "--json", "--max-rows", "3",
                         "SELECT id FROM sample ORDER BY id")
    assert code == 0
    assert [row["id"] for row in json.loads(out)] == [1, 2, 3]
    assert err == "profstore: output stopped at 3 rows (--max-rows N shows more)\n"
    code, out, err = run(capsys, "sql", "--db", fixture_db, "--json", "--max-rows", "10",
                         "SELECT id FROM sample ORDER BY id")
    assert (code, len(json.loads(out)), err) == (0, 10, "")
