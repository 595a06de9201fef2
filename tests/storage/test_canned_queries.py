"""The web view's canned queries come from storage: the served metadata carries exactly
``canned_queries_metadata()``, the shipped YAML holds none of its own, and the queries
answer on the readers' fixture (tests/storage/conftest.py) what the storage readers do."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import pytest
import yaml
from profstore.storage.canned_queries import CANNED_QUERIES, canned_queries_metadata
from profstore.storage.points import kernel_regimes, regime_points
from profstore.web.config import load_metadata
from sqlalchemy import text

pytestmark = pytest.mark.sqlite_only  # the web view serves SQLite; the SQL is SQLite's


def test_the_served_metadata_carries_the_storage_queries():
    served = load_metadata("fixture")["databases"]["fixture"]["queries"]
    assert served == canned_queries_metadata()
    assert list(served) == ["kernel_regimes", "wide_duplicates", "refusals_by_reason",
                            "regime_points", "kernels_only_in", "mapping_routes"]
    shipped = yaml.safe_load(importlib.resources.files("profstore.web").joinpath(
        "metadata.yaml").read_text(encoding="utf-8"))
    assert "queries" not in shipped["database"]


def _rows(conn, name: str, **params: str) -> list[tuple]:
    [query] = [q for q in CANNED_QUERIES if q.name == name]
    return [tuple(r) for r in conn.execute(text(query.sql), params)]


def test_regime_points_answers_what_the_reader_does(conn, v18, readers_db):
    assert Path(readers_db).is_file()
    for regime in kernel_regimes(conn, v18, "RmsNorm"):
        canned = _rows(conn, "regime_points", version="v0.18", kernel="RmsNorm",
                       path=regime.path, regime_key=regime.regime_key)
        read = regime_points(conn, v18, "RmsNorm", regime.path, regime.regime_key)
        assert sorted(((row[0],), row[3]) for row in canned) == sorted(
            (p.axes, p.latency_us) for p in read)
        assert len(canned) == regime.points


def test_kernel_queries_on_the_fixture(conn):
    kernels = _rows(conn, "kernels_only_in", version="v0.18", other="hccl-v8.5")
    assert [(r[0], r[2], r[3], r[4]) for r in kernels] == [
        ("Add", 3, 2, 1), ("Range", 1, 1, 0), ("RmsNorm", 8, 7, 1)]
    regimes = _rows(conn, "kernel_regimes", kernel="RmsNorm", version="")
    assert [r[4] for r in regimes] == [5, 2]  # points, the largest first
    refusals = _rows(conn, "refusals_by_reason", version="v0.18")
    assert sorted((r[0], r[2], r[3]) for r in refusals) == [
        ("path_refusal", "target_unavailable", "Range"),
        ("rejected_row", "column_count", "Add.csv"),
        ("rejected_row", "latency_invalid", "RmsNorm.csv")]
