"""A row a path cannot use stays a sample and its refusal is stored (DFC ``EP Size``)."""

from __future__ import annotations

import pytest
from profstore.storage import schema as t
from profstore.storage.engines import make_engine
from sqlalchemy import select

from tests.support.perfdb import Row, build_database, write_version

DFC = "DispatchFFNCombine"


def dfc_row(tokens: int, ep_size: str, latency: float) -> Row:
    return Row(
        [[tokens, 7168], [8, 7168, 4096], [8, 2048, 7168], [tokens, 8]],
        ["DT_BF16", "INT8", "INT8", "INT32"],
        [[tokens, 7168]], ["DT_BF16"], latency, extra={"EP Size": ep_size})


@pytest.fixture()
def database(tmp_path):
    rows = [dfc_row(16, "16", 100.0), dfc_row(32, "", 150.0), dfc_row(64, "abc", 210.0),
            dfc_row(128, " 0 ", 300.0)]
    write_version(tmp_path / "data", {DFC: rows})
    engine = make_engine(build_database(tmp_path))
    yield engine
    engine.dispose()


def test_rows_with_a_bad_ep_size_are_still_samples(database):
    with database.connect() as conn:
        samples = conn.execute(select(t.sample.c.line_no, t.sample.c.latency_us,
                                      t.sample.c.extras).order_by(t.sample.c.line_no)).all()
        rejected = conn.execute(select(t.rejected_row.c.id)).all()
    assert [tuple(s) for s in samples] == [
        (2, 100.0, '{"EP Size": "16"}'), (3, 150.0, '{"EP Size": ""}'),
        (4, 210.0, '{"EP Size": "abc"}'), (5, 300.0, '{"EP Size": " 0 "}')]
    assert rejected == []


def test_blank_or_invalid_ep_size_is_a_path_refusal_of_the_dfc_path(database):
    r, s = t.path_refusal.c, t.sample.c
    with database.connect() as conn:
        refusals = conn.execute(
            select(s.line_no, r.path, r.reason).join(t.sample, s.id == r.sample_id)
            .where(r.kernel_type == DFC).order_by(s.line_no)).all()
        points = conn.execute(
            select(s.line_no, t.sample_point.c.ep_size).join(
                t.sample, s.id == t.sample_point.c.sample_id)
            .where(t.sample_point.c.path == "moe_fused")).all()
    assert [tuple(x) for x in refusals if x.path == "moe_fused"] == [
        (3, "moe_fused", "required_field_missing: EP Size blank"),
        (4, "moe_fused", "required_field_missing: EP Size 'abc' is not a positive integer"),
        (5, "moe_fused", "required_field_missing: EP Size '0' is not a positive integer"),
    ]
    assert [tuple(p) for p in points] == [(2, 16)]
