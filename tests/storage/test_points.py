"""The sample points of the readers' fixture (tests/storage/conftest.py). RmsNorm's rows
(tests.support.cli_fixture.RMS_ROWS, tokens on axis_0): hidden 7168 at 8 (10.0), 16
(14.0), 64 (30.0, 34.0, 32.5); hidden 4096 at 8 (5.0) and 32 (9.0). Add: width 128 at
tokens 4 (3.0) and 8 (4.0)."""

from __future__ import annotations

import json

from profstore.storage.points import (
    KernelPath,
    RegimeCount,
    kernel_paths,
    kernel_points,
    kernel_regimes,
    point_samples,
    regime_points,
    subtype_values,
    version_points,
)
from profstore.storage.provenance import stored_row

WIDE = [((8.0,), 10.0), ((16.0,), 14.0), ((64.0,), 30.0), ((64.0,), 34.0), ((64.0,), 32.5)]
NARROW = [((8.0,), 5.0), ((32.0,), 9.0)]


def _regime_key(conn, v18: int, hidden: int) -> str:
    keys = {p.regime_key for p in kernel_points(conn, v18, "RmsNorm")}
    [key] = [k for k in keys if json.loads(k)["shape_signature"] == f"T,{hidden};{hidden}"]
    return key


def test_every_point_of_the_version(conn, v18):
    points = version_points(conn, v18)
    rms = sorted((p.axes, p.latency_us) for p in points if p.kernel == "RmsNorm")
    add = sorted((p.axes, p.latency_us) for p in points if p.kernel == "Add")
    assert (rms, add) == (sorted(WIDE + NARROW), [((4.0,), 3.0), ((8.0,), 4.0)])
    assert {p.path for p in points} == {"generic"}
    [at_16] = [p for p in points if p.kernel == "RmsNorm" and p.axes == (16.0,)]
    assert stored_row(conn, v18, "RmsNorm.csv", 3).id == at_16.sample_id  # type: ignore[union-attr]


def test_one_kernels_points_by_regime(conn, v18):
    points = kernel_points(conn, v18, "RmsNorm")
    wide, narrow = _regime_key(conn, v18, 7168), _regime_key(conn, v18, 4096)
    assert sorted((p.axes, p.latency_us) for p in points if p.regime_key == wide) == \
        sorted(WIDE)
    assert sorted((p.axes, p.latency_us) for p in points if p.regime_key == narrow) == NARROW
    assert kernel_points(conn, v18, "NoSuchKernel") == []


def test_point_samples_narrowed_to_a_regime(conn, v18):
    wide = _regime_key(conn, v18, 7168)
    found = point_samples(conn, v18, kernel="RmsNorm", path="generic", regime_key=wide)
    assert sorted(p.axes[0] for p in found) == [8.0, 16.0, 64.0, 64.0, 64.0]
    assert len({p.sample_id for p in found}) == 5
    assert len(point_samples(conn, v18)) == 9
    assert point_samples(conn, v18, path="no_such_path") == []


def test_one_regimes_points(conn, v18):
    narrow = _regime_key(conn, v18, 4096)
    found = regime_points(conn, v18, "RmsNorm", "generic", narrow)
    assert sorted((p.axes, p.latency_us) for p in found) == NARROW


def test_a_kernels_regimes_with_counts(conn, v18):
    wide, narrow = _regime_key(conn, v18, 7168), _regime_key(conn, v18, 4096)
    assert kernel_regimes(conn, v18, "RmsNorm") == sorted(
        [RegimeCount("RmsNorm", "generic", narrow, 2), RegimeCount("RmsNorm", "generic", wide, 5)],
        key=lambda r: r.regime_key)
    assert kernel_regimes(conn, v18, "RmsNorm", "no_such_path") == []


def test_kernels_with_paths_and_subtypes(conn, v18):
    assert sorted(kernel_paths(conn, v18), key=lambda k: k.kernel) == [
        KernelPath("Add", "generic"), KernelPath("RmsNorm", "generic")]
    assert subtype_values(conn, v18) == []  # every point is on the generic path
