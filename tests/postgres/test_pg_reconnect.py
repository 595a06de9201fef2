"""Issue #24 item 1: a lookup that meets a dead connection (server restart, terminated
backend, idle-session timeout) reconnects and answers; a server that stays down gives one
``DatabaseUnavailable`` (library) or one line (CLI), never a driver error."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from profstore.api import Store
from profstore.cli.main import main
from profstore.model.leaf import LeafOp
from profstore.storage import reconnect
from profstore.storage.reconnect import DatabaseUnavailable

from tests.support import perfdb
from tests.support.paths import REPO
from tests.support.postgres import database_on, execute, rms_leaf

pytestmark = pytest.mark.postgresql_only


def answers(store: Store, tokens: list[int]) -> list[tuple]:
    out = []
    for t in tokens:
        result = store.lookup(LeafOp.from_json(rms_leaf(t)), "v0.18")
        out.append((result.latency_us, result.source, result.reason))
    return out


def test_a_lookup_survives_a_server_restart(cluster, cluster_db):
    with Store.open(cluster_db) as store:
        before = answers(store, [8, 12])
        cluster.restart()
        store.clear_cache()  # every answer must come from the restarted server
        assert answers(store, [8, 12]) == before
        assert answers(store, [20]) == [(10.0, before[1][1], before[1][2])]


def test_a_lookup_survives_a_terminated_backend(rms_data):
    url = database_on(perfdb.BACKEND.admin_url or "", rms_data)
    try:
        with Store.open(url) as store:
            before = answers(store, [8, 12])
            name = url.rsplit("/", 1)[1]
            killed = execute(perfdb.BACKEND.admin_url or "",
                             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             f"WHERE datname = '{name}' AND pid <> pg_backend_pid()")
            assert killed and all(row[0] for row in killed)
            store.clear_cache()
            assert answers(store, [8, 12]) == before
    finally:
        perfdb.drop_databases([url.rsplit("/", 1)[1]])


def test_a_lookup_survives_the_idle_session_timeout(rms_data):
    url = database_on(perfdb.BACKEND.admin_url or "", rms_data)
    name = url.rsplit("/", 1)[1]
    try:
        execute(perfdb.BACKEND.admin_url or "",
                f"ALTER DATABASE \"{name}\" SET idle_session_timeout = '1s'")
        with Store.open(url) as store:
            before = answers(store, [8, 12])
            time.sleep(2.5)
            store.clear_cache()
            assert answers(store, [8, 12]) == before
    finally:
        perfdb.drop_databases([name])


def test_a_server_that_stays_down_is_one_profstore_error(cluster, cluster_db, monkeypatch):
    monkeypatch.setattr(reconnect, "RECONNECT_SECONDS", 1.0)
    with Store.open(cluster_db) as store:
        answers(store, [8])
        cluster.stop()
        try:
            store.clear_cache()
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailable) as raised:
                answers(store, [8])
            assert time.monotonic() - started < 10
        finally:
            cluster.start()
    message = str(raised.value)
    assert message.startswith("database postgresql+psycopg://postgres@127.0.0.1:")
    assert "unavailable (for 1 s)" in message and "\n" not in message


def test_the_cli_says_a_server_that_stays_down_in_one_line(cluster, cluster_db, monkeypatch,
                                                           capsys):
    """The stream answers the lines it can, then one ``profstore: error:`` line, exit 1."""
    monkeypatch.setattr(reconnect, "RECONNECT_SECONDS", 1.0)

    def lines():
        yield json.dumps({"id": 0, **rms_leaf(8)}) + "\n"
        cluster.stop()
        yield json.dumps({"id": 1, **rms_leaf(12)}) + "\n"

    monkeypatch.setattr(sys, "stdin", lines())
    try:
        code = main(["lookup", "--db", cluster_db, "--version", "v0.18", "-"])
    finally:
        cluster.start()
    out, err = capsys.readouterr()
    assert code == 1
    assert [json.loads(line)["latency_us"] for line in out.splitlines()] == [7.0]
    assert err.startswith("profstore: error: database postgresql+psycopg://postgres@")
    assert err.count("\n") == 1 and "unavailable" in err and "Traceback" not in err


def test_the_cli_stream_answers_every_line_across_a_restart(cluster, cluster_db):
    """``profstore lookup`` reading stdin: lines before, during and after a restart."""
    process = subprocess.Popen(
        [sys.executable, "-m", "profstore", "lookup", "--db", cluster_db, "--version",
         "v0.18", "-"], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    got = []
    for i, tokens in enumerate((8, 12, 16, 20, 24, 40)):
        if i == 3:
            cluster.restart()
        process.stdin.write(json.dumps({"id": i, **rms_leaf(tokens)}) + "\n")
        process.stdin.flush()
        got.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
    assert [g["id"] for g in got] == list(range(6))
    assert [g["latency_us"] for g in got] == [7.0, 8.0, 9.0, 10.0, 11.0, 15.0]
