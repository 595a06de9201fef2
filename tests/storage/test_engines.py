"""Issue #24 item 2: ``Store.open`` refuses a database that is not at this code's head
revision (older, newer, or no schema), naming both revisions and the command to run,
instead of opening it and failing at the first lookup (``no such table: regime_points``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from profstore.api import Store
from profstore.cli.main import main
from profstore.storage.engines import SchemaMismatch, alembic_config, known_revisions, make_engine
from profstore.storage.urls import normalize_url, redact_url
from sqlalchemy import text

from tests.support import perfdb

HEAD = known_revisions()[-1]


def database_at(tmp_path: Path, revision: str | None) -> str:
    """A database migrated to ``revision`` (None: no schema at all)."""
    url = (perfdb.new_empty_database() if perfdb.on_postgresql()
           else str(tmp_path / "old.db"))
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            if revision is not None:
                config = alembic_config(str(engine.url.render_as_string(hide_password=False)))
                config.attributes["connection"] = conn
                command.upgrade(config, revision)
            else:
                conn.execute(text("CREATE TABLE unrelated (x INTEGER)"))
    finally:
        engine.dispose()
    return url


def shown(url: str) -> str:
    return redact_url(normalize_url(url))


def test_the_shipped_head_is_alembics_head():
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert script.get_current_head() == HEAD
    assert known_revisions() == [s.revision for s in reversed(list(script.walk_revisions()))]


def test_an_older_revision_is_refused_at_open(tmp_path):
    url = database_at(tmp_path, "0005")
    with pytest.raises(SchemaMismatch) as raised:
        Store.open(url)
    assert str(raised.value) == (f"{shown(url)} is at schema revision 0005, this profstore "
                                 f"needs {HEAD}; run `profstore db upgrade`")


def test_a_newer_revision_is_refused_at_open(tmp_path):
    url = database_at(tmp_path, HEAD)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9001'"))
    engine.dispose()
    with pytest.raises(SchemaMismatch, match=f"at schema revision 9001, which this profstore "
                                             f"\\(head {HEAD}\\) does not know"):
        Store.open(url)


def test_a_database_without_the_schema_is_refused_at_open(tmp_path):
    url = database_at(tmp_path, None)
    with pytest.raises(SchemaMismatch, match="has no profstore schema; run `profstore db "
                                             "upgrade` first"):
        Store.open(url)


def test_a_writable_open_still_upgrades(tmp_path):
    url = database_at(tmp_path, "0005")
    Store.open(url, read_only=False).close()
    Store.open(url).close()


def test_the_cli_says_it_in_one_line(tmp_path, capsys):
    url = database_at(tmp_path, "0005")
    code = main(["versions", "--db", url])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (f"profstore: error: {shown(url)} is at schema revision 0005, this "
                   f"profstore needs {HEAD}; run `profstore db upgrade`\n")
