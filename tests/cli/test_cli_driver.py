"""A URL whose database driver is not installed is one line naming the driver and module;
any other import failure is a bug and keeps its traceback."""

from __future__ import annotations

import pytest
from profstore.cli.main import main

pytestmark = pytest.mark.no_database


def test_missing_postgresql_driver_names_the_driver_and_the_extra(capsys):
    code = main(["versions", "--db", "postgresql+pg8000://u@127.0.0.1:1/x"])
    err = capsys.readouterr().err
    assert code == 1
    assert err == ("profstore: error: the postgresql+pg8000 driver is not installed: no module "
                   "named 'pg8000' (install profstore[postgres] and use a postgresql+psycopg:// "
                   "URL)\n")


def test_an_unrelated_import_error_is_not_reported_as_a_driver_problem(monkeypatch):
    import profstore.cli.inspect_cmd as inspect_cmd

    def broken(_args):
        raise ImportError("cannot import name 'x' from 'profstore.somewhere'")

    monkeypatch.setattr(inspect_cmd, "versions", broken)
    with pytest.raises(ImportError, match="profstore.somewhere"):
        main(["versions", "--db", "sqlite://"])
