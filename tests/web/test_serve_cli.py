"""``profstore serve`` without a browser: what it refuses, its help, and the shipped
metadata covering every table, view and column of the schema."""

from __future__ import annotations

import sqlite3
import sys

import pytest
from profstore.cli.main import main
from profstore.storage import schema
from profstore.web.config import load_metadata
from profstore.web.server import wal_in_use

pytestmark = pytest.mark.no_database


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_serve_refuses_a_postgresql_url_with_the_reason(capsys):
    code, out, err = run(capsys, "serve", "--db", "postgresql+psycopg://u@127.0.0.1:1/x")
    assert (code, out) == (1, "")
    assert err.startswith("profstore: error: profstore serve shows SQLite stores only: "
                          "Datasette reads SQLite files and has no PostgreSQL backend")
    assert err.count("\n") == 1


def test_serve_without_datasette_says_how_to_install_it(capsys, monkeypatch, tmp_path):
    from tests.support.cli_fixture import ingest_into, write_fixture

    db = ingest_into(tmp_path / "s.db", write_fixture(tmp_path / "data").parents[2])
    monkeypatch.setitem(sys.modules, "datasette.app", None)
    code, out, err = run(capsys, "serve", "--db", str(db))
    assert (code, out) == (1, "")
    assert err == ("profstore: error: the web view needs Datasette; install the extra: "
                   "pip install 'profstore[web]'\n")


def test_serve_on_a_missing_file_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "serve", "--db", str(tmp_path / "none.db"))
    assert code == 1
    assert err == (f"profstore: error: no database at {tmp_path / 'none.db'}; run "
                   f"`profstore ingest PATH --db {tmp_path / 'none.db'}` first\n")


def test_serve_help_describes_the_pages_with_an_example(capsys):
    code, out, _ = run(capsys, "serve", "--help")
    assert code == 0
    for text in ("/-/profstore/regime", "/-/profstore/overview", "/-/profstore/explain",
                 "profstore serve --db perf.db --port 8042 --open", "127.0.0.1"):
        assert text in out


def test_live_mode_is_chosen_when_a_write_ahead_log_is_in_use(tmp_path):
    db = tmp_path / "s.db"
    db.write_bytes(b"")
    assert not wal_in_use(db)
    (tmp_path / "s.db-wal").write_bytes(b"")
    assert not wal_in_use(db)
    (tmp_path / "s.db-wal").write_bytes(b"frame")
    assert wal_in_use(db)


def test_metadata_describes_every_table_view_and_column(tmp_path):
    from profstore.storage.engines import make_engine, upgrade

    engine = make_engine(tmp_path / "empty.db")
    upgrade(engine)
    engine.dispose()
    conn = sqlite3.connect(tmp_path / "empty.db")
    objects = {name: [c[1] for c in conn.execute(f"pragma table_info('{name}')")]
               for (name,) in conn.execute(
                   "select name from sqlite_master where type in ('table', 'view')")}
    conn.close()
    tables = load_metadata("perf")["databases"]["perf"]["tables"]
    assert set(schema.metadata.tables) | {"regimes", "duplicates"} <= set(objects)
    for name, columns in objects.items():
        assert tables.get(name, {}).get("description"), name
        if name == "alembic_version":
            continue
        described = tables[name]["columns"]
        missing = [c for c in columns if c != "id" and not described.get(c)]
        assert missing == [], name
        for facet in tables[name].get("facets", []):
            assert facet in columns, (name, facet)
