"""PostgreSQL test helpers: the marker, running the CLI, counting samples."""

from __future__ import annotations

import json

import pytest
from profstore.cli.main import main

needs_postgresql = pytest.mark.postgresql_only



def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err



def count_samples(capsys, url: str) -> int:
    code, out, _ = run(capsys, "sql", "--db", url, "--json", "SELECT count(*) AS n FROM sample")
    assert code == 0
    return json.loads(out)[0]["n"]

