"""Issue #24 item 5: ``profstore sql`` on PostgreSQL runs one statement, read-only, within its
time limit, without superuser powers, whatever the text tries. The test cluster's user is
a superuser (``postgres``), as the issue's reproductions were."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.support import perfdb
from tests.support.postgres import count_samples, run

pytestmark = pytest.mark.postgresql_only
READ_ONLY = "profstore: error: profstore sql is read-only: "


def rejected_rows(url: str) -> int:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM rejected_row")).scalar_one())
    finally:
        engine.dispose()


def test_a_second_statement_cannot_commit_and_write(capsys, fixture_url):
    before = rejected_rows(fixture_url)
    statement = "SELECT 1; COMMIT; BEGIN READ WRITE; DELETE FROM rejected_row; COMMIT"
    code, out, err = run(capsys, "sql", "--db", fixture_url, statement)
    assert (code, out) == (1, "")
    assert err == f"{READ_ONLY}one statement at a time\n"
    assert rejected_rows(fixture_url) == before


def test_a_second_statement_cannot_run_a_program(capsys, fixture_url, tmp_path: Path):
    marker = Path("/tmp") / f"profstore-door-{tmp_path.name}"
    marker.unlink(missing_ok=True)
    statement = f"SELECT 1; COMMIT; COPY (SELECT 1) TO PROGRAM 'touch {marker}'"
    code, out, err = run(capsys, "sql", "--db", fixture_url, statement)
    assert (code, out, err) == (1, "", f"{READ_ONLY}one statement at a time\n")
    assert not marker.exists()


def test_a_second_statement_cannot_outrun_the_time_limit(capsys, fixture_url):
    started = time.monotonic()
    code, out, err = run(capsys, "sql", "--db", fixture_url, "--timeout", "1",
                         "SELECT 1; COMMIT; SELECT pg_sleep(8)")
    assert (code, out) == (1, "")
    assert time.monotonic() - started < 6
    assert err.count("\n") == 1


@pytest.mark.parametrize("statement", [
    "SELECT set_config('statement_timeout', '0', false), pg_sleep(8)",
    "SELECT pg_catalog.\"set_config\"('role', 'postgres', true)",
])
def test_set_config_is_refused(capsys, fixture_url, statement):
    started = time.monotonic()
    code, out, err = run(capsys, "sql", "--db", fixture_url, "--timeout", "1", statement)
    assert (code, out, err) == (1, "", f"{READ_ONLY}function set_config() is not allowed\n")
    assert time.monotonic() - started < 6


def test_one_statement_still_stops_at_the_limit(capsys, fixture_url):
    started = time.monotonic()
    code, out, err = run(capsys, "sql", "--db", fixture_url, "--timeout", "1",
                         "SELECT pg_sleep(8)")
    assert (code, out) == (1, "")
    assert err.startswith("profstore: error: statement stopped after 1 s")
    assert time.monotonic() - started < 6


def test_a_superuser_cannot_read_server_files(capsys, fixture_url):
    code, out, err = run(capsys, "sql", "--db", fixture_url,
                         "SELECT pg_read_file('/etc/passwd') AS f")
    assert (code, out) == (1, "")
    assert err == f"{READ_ONLY}permission denied for function pg_read_file\n"


def test_a_superuser_cannot_end_another_databases_session(capsys, fixture_url):
    other = create_engine(perfdb.BACKEND.admin_url or "", poolclass=NullPool)
    with other.connect() as victim:
        pid = victim.execute(text("SELECT pg_backend_pid()")).scalar_one()
        code, out, err = run(capsys, "sql", "--db", fixture_url,
                             f"SELECT pg_terminate_backend({pid})")
        assert (code, out) == (1, "")
        assert err.startswith(READ_ONLY) and err.count("\n") == 1
        assert victim.execute(text("SELECT 1")).scalar_one() == 1
    other.dispose()


def test_reads_still_work_with_percent_signs_and_params(capsys, fixture_url):
    code, out, _ = run(capsys, "sql", "--db", fixture_url, "--json",
                       "SELECT 'a%' AS p, count(*) AS n FROM sample WHERE raw_text LIKE '%'")
    assert code == 0 and '"p": "a%"' in out
    assert count_samples(capsys, fixture_url) == 2
