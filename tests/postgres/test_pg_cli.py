"""The CLI on PostgreSQL: ``profstore sql`` cannot write (the statement guard, then the
read-only session), and a password in ``--db`` is never printed, whether the connection
fails or succeeds."""

from __future__ import annotations

import json

import pytest
from profstore.storage import sql_door
from sqlalchemy.engine import make_url

from tests.support.perfdb import (
    Row,
    new_database,
    write_version,
)
from tests.support.postgres import count_samples, needs_postgresql, run

SECRET = "secret"
UNREACHABLE = f"postgresql+psycopg://postgres:{SECRET}@127.0.0.1:55432/x"
"""The brief's example: a server may or may not listen there; database x never exists."""
VERBS = (
    ("versions",),
    ("kernels", "--version", "v0.18"),
    ("sql", "SELECT 1"),
    ("db", "upgrade"),
    ("explain", "--version", "v0.18", '{"op": "aten.mm.default"}'),
)


def with_password(url: str) -> str:
    """The same database with a password in the URL (the test cluster trusts local users,
    so the password is ignored but still travels through every code path)."""
    return make_url(url).set(password=SECRET).render_as_string(hide_password=False)


@pytest.mark.no_database
@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_a_password_is_not_printed_when_the_connection_fails(capsys, verb):
    code, out, err = run(capsys, *verb, "--db", UNREACHABLE)
    assert code == 1
    assert SECRET not in out + err
    assert err.startswith("profstore: error: ") and err.count("\n") == 1


@needs_postgresql
def test_a_password_is_not_printed_when_the_commands_succeed(capsys, tmp_path):
    url = with_password(new_database(tmp_path))
    data = tmp_path / "data"
    write_version(data, {"RmsNorm": [Row([[8, 7168], [7168]], ["DT_BF16"] * 2, [[8, 7168]],
                                         ["DT_BF16"], 10.0)]})
    outputs = [run(capsys, "db", "upgrade", "--db", url),
               run(capsys, "ingest", str(data), "--db", url),
               run(capsys, "versions", "--db", url),
               run(capsys, "sql", "--db", url, "SELECT count(*) FROM sample")]
    assert [code for code, _, _ in outputs] == [0, 0, 0, 0]
    printed = "".join(out + err for _, out, err in outputs)
    assert SECRET not in printed
    assert "postgres:***@127.0.0.1" in outputs[0][1]


@needs_postgresql
@pytest.mark.parametrize("statement", [
    "INSERT INTO profile_set (alias) VALUES ('x')",
    "DELETE FROM sample",
    "DROP TABLE sample",
    "TRUNCATE sample",
    "SELECT 1; DELETE FROM sample",
    "WITH gone AS (DELETE FROM sample RETURNING id) SELECT * FROM gone",
    "DO $$ BEGIN DELETE FROM sample; END $$",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "COPY sample TO '/tmp/x'",
    "SELECT * FROM sample FOR UPDATE",
])
def test_sql_refuses_writes_on_postgresql(capsys, fixture_url, statement):
    code, out, err = run(capsys, "sql", "--db", fixture_url, statement)
    assert (code, out) == (1, "")
    assert err.startswith("profstore: error: profstore sql is read-only: ")
    assert err.count("\n") == 1
    assert count_samples(capsys, fixture_url) == 2


@needs_postgresql
@pytest.mark.parametrize(("statement", "message"), [
    ("DELETE FROM sample", "cannot execute DELETE in a read-only transaction"),
    ("WITH gone AS (DELETE FROM sample RETURNING id) SELECT * FROM gone",
     "cannot execute SELECT in a read-only transaction"),
    # the superuser's statement runs as pg_read_all_data, which may not use the sequence
    ("SELECT nextval('sample_key_id_seq')", "permission denied for sequence sample_key_id_seq"),
])
def test_the_postgresql_transaction_is_read_only_even_without_the_keyword_check(capsys, fixture_url,
                                                                    monkeypatch, statement,
                                                                    message):
    monkeypatch.setattr(sql_door, "check_statement", lambda sql, dialect: None)
    code, out, err = run(capsys, "sql", "--db", fixture_url, statement)
    assert (code, out) == (1, "")
    assert err == f"profstore: error: profstore sql is read-only: {message}\n"
    assert count_samples(capsys, fixture_url) == 2


@needs_postgresql
def test_what_a_read_only_session_still_allows_is_rolled_back(capsys, fixture_url,
                                                             monkeypatch):
    """PostgreSQL lets ``lo_create`` run in a read-only transaction; ``profstore sql``
    never commits, so the large object does not outlive the command."""
    monkeypatch.setattr(sql_door, "check_statement", lambda sql, dialect: None)
    objects = "SELECT count(*) AS n FROM pg_largeobject_metadata"
    assert run(capsys, "sql", "--db", fixture_url, "SELECT lo_create(0) AS oid")[0] == 0
    code, out, _ = run(capsys, "sql", "--db", fixture_url, "--json", objects)
    assert (code, json.loads(out)) == (0, [{"n": 0}])
