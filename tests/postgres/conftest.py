"""Fixtures of the server-life tests: a private cluster (restarted, stopped, its
``max_connections`` changed) and small stores on it or on the session's test server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from profstore.ingest.loader import ingest_path
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.pgcluster import Cluster, remove_cluster, start_cluster

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


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """A private PostgreSQL cluster; a test that changes its settings restores them."""
    started = start_cluster()
    try:
        yield started
    finally:
        remove_cluster(started)


@pytest.fixture(scope="session")
def rms_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rms_version(tmp_path_factory.mktemp("rms") / "data")


@pytest.fixture()
def cluster_db(cluster: Cluster, rms_data: Path) -> str:
    """A filled database on the private cluster (the cluster is dropped at session end)."""
    return database_on(cluster.url, rms_data)


@pytest.fixture()
def fixture_url(tmp_path: Path) -> str:
    """A two-row RmsNorm store on the session's backend (the CLI tests' --db)."""
    rows = [Row([[t, 7168], [7168]], ["DT_BF16"] * 2, [[t, 7168]], ["DT_BF16"], lat)
            for t, lat in ((8, 10.0), (16, 14.0))]
    write_version(tmp_path / "data", {"RmsNorm": rows},
                  mapping_doc({"tensor_cast.rms_norm.default": {"kernel_type": "RmsNorm"}}))
    return build_database(tmp_path)
