"""PostgreSQL test helpers: the marker, running the CLI, counting samples, statements and
databases on a server, the small RmsNorm version of the server-life tests."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from profstore.cli.main import main
from profstore.ingest.loader import ingest_path
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.support.perfdb import Row, mapping_doc, write_version

needs_postgresql = pytest.mark.postgresql_only



def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err



def count_samples(capsys, url: str) -> int:
    code, out, _ = run(capsys, "sql", "--db", url, "--json", "SELECT count(*) AS n FROM sample")
    assert code == 0
    return json.loads(out)[0]["n"]


RMS_OP = "tensor_cast.rms_norm.default"
TOKENS = (8, 16, 32, 64, 128)


def write_rms_version(root: Path) -> Path:
    rows = [Row([[t, 7168], [7168]], ["DT_BF16"] * 2, [[t, 7168]], ["DT_BF16"], 5.0 + t / 4)
            for t in TOKENS]
    write_version(root, {"RmsNorm": rows}, mapping_doc({RMS_OP: {"kernel_type": "RmsNorm"}}))
    return root


def rms_leaf(tokens: int) -> dict:
    return {"op": RMS_OP, "args": [{"shape": [tokens, 7168], "dtype": "bfloat16"},
                                   {"shape": [7168], "dtype": "bfloat16"}],
            "outputs": [{"shape": [tokens, 7168], "dtype": "bfloat16"}]}


def execute(url: str, *statements: str) -> list:
    """Run statements in autocommit on ``url``; the last one's rows."""
    engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            rows: list = []
            for statement in statements:
                result = conn.execute(text(statement))
                rows = list(result) if result.returns_rows else []
            return rows
    finally:
        engine.dispose()


def database_on(server_url: str, data: Path, ingest: bool = True) -> str:
    """A new database on the server of ``server_url``, migrated and (``ingest``) filled."""
    name = f"profstore_r_{uuid.uuid4().hex[:12]}"
    execute(server_url, f'CREATE DATABASE "{name}"')
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    if ingest:
        engine = make_engine(url)
        try:
            upgrade(engine)
            ingest_path(engine, data, workers=0)
        finally:
            engine.dispose()
    return url
