"""The communication rows of the readers' fixture (tests.support.readers_fixture,
``ALL_REDUCE_ROWS``): all-reduce on 4 devices at 1000 B (10.0 us, line 2) and 2000 B
(14.0 us, line 3), on 8 devices at 1000 B (20.0 us, line 4); tier 1."""

from __future__ import annotations

from profstore.storage.catalog import hccl_profile_id
from profstore.storage.comm_samples import CommPoint, collective_points, comm_samples
from profstore.storage.engines import make_engine

from tests.support.perfdb import DEVICE
from tests.support.readers_fixture import ALL_REDUCE


def test_a_collectives_points_on_a_device_count(readers_db, conn):
    hccl = hccl_profile_id(conn, DEVICE, "v8.5")
    assert hccl is not None
    engine = make_engine(readers_db)
    try:
        four = collective_points(engine, hccl, ALL_REDUCE, 4)
        assert sorted(four or [], key=lambda p: p.message_bytes) == [
            CommPoint(1000.0, 10.0, "1", 2), CommPoint(2000.0, 14.0, "1", 3)]
        assert collective_points(engine, hccl, ALL_REDUCE, 16) == []
        assert collective_points(engine, hccl, "hcom_broadcast_", 4) is None
    finally:
        engine.dispose()


def test_every_communication_row(conn):
    hccl = hccl_profile_id(conn, DEVICE, "v8.5")
    assert hccl is not None
    rows = sorted(comm_samples(conn, hccl), key=lambda r: r.point.line_no)
    assert [(r.collective, r.devices, r.point) for r in rows] == [
        (ALL_REDUCE, 4, CommPoint(1000.0, 10.0, "1", 2)),
        (ALL_REDUCE, 4, CommPoint(2000.0, 14.0, "1", 3)),
        (ALL_REDUCE, 8, CommPoint(1000.0, 20.0, "1", 4))]
