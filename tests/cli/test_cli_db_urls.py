"""Issue #24 item 3: ``--db`` URLs are checked before anything is created, never echoed with
their password, and a server that accepts TCP but never answers fails within the connect
timeout instead of hanging."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from profstore.cli.main import main

pytestmark = pytest.mark.no_database


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.mark.parametrize(("query", "limit"), [("?connect_timeout=2", 8), ("", 20)],
                         ids=["url-timeout", "default-timeout"])
def test_a_server_that_never_answers_fails_within_the_timeout(capsys, silent_server, query,
                                                              limit):
    url = f"postgresql+psycopg://u:hush@127.0.0.1:{silent_server}/db{query}"
    started = time.monotonic()
    code, out, err = run(capsys, "versions", "--db", url)
    assert time.monotonic() - started < limit
    assert (code, out) == (1, "")
    assert err.startswith("profstore: error: database error: ") and err.count("\n") == 1
    assert "hush" not in err


def test_a_bad_port_is_one_line(capsys):
    code, out, err = run(capsys, "versions", "--db",
                         "postgresql+psycopg://u:pw@127.0.0.1:56x02/db")
    assert (code, out) == (1, "")
    assert err == ("profstore: error: invalid database URL "
                   "postgresql+psycopg://u:***@127.0.0.1:56x02/db: port '56x02' is not a number\n")


@pytest.mark.parametrize("verb", [("versions",), ("db", "upgrade"), ("ingest", ".")])
def test_a_one_slash_url_creates_nothing(capsys, tmp_path, monkeypatch, verb):
    monkeypatch.chdir(tmp_path)
    if verb[0] == "ingest":
        (tmp_path / "d" / "vllm_ascend" / "v1").mkdir(parents=True)
        (tmp_path / "d" / "vllm_ascend" / "v1" / "x.csv").write_text("a\n")
        verb = ("ingest", str(tmp_path / "d"))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    code, out, err = run(capsys, *verb, "--db", "postgresql+psycopg:/u:pw@host:5432/db")
    assert (code, out) == (1, "")
    assert err == ("profstore: error: invalid database URL postgresql+psycopg:/u:***@host:5432/"
                   "db: expected postgresql+psycopg://… (two slashes after the scheme)\n")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_an_unencoded_at_sign_in_the_password_is_not_printed(capsys):
    code, out, err = run(capsys, "versions", "--db",
                         "postgresql+psycopg://u:p@ss@127.0.0.1:5432/db")
    assert (code, out) == (1, "")
    assert err == ("profstore: error: invalid database URL postgresql+psycopg://u:***@127.0.0.1"
                   ":5432/db: the user or password holds an unencoded '@' (write it as %40)\n")
