"""Fixtures of the server-life tests: a private cluster (restarted, stopped, its
``max_connections`` changed) and small stores on it or on the session's test server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.pgcluster import Cluster, remove_cluster, start_cluster
from tests.support.postgres import database_on, write_rms_version


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
