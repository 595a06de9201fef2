"""``python -m bench --quick``: every measurement of both databases, the report's lines, and
the per-lookup figures as the median of their rounds."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import main as bench_main
from bench.speed_and_size import MEASUREMENT_KEYS
from tests.support.markers import requires_perfdb


@requires_perfdb
@pytest.mark.sqlite_only
@pytest.mark.bench
def test_bench_quick_writes_every_measurement(capsys, tmp_path):
    target = tmp_path / "bench.json"
    code = bench_main(["--quick", "--json", str(target)])
    out = capsys.readouterr().out
    data = json.loads(target.read_text())
    assert code == 0
    assert (data["quick"], data["scale"]) == (True, 2)
    for label in ("base", "scaled"):
        assert [k for k in MEASUREMENT_KEYS if data[label].get(k) is None] == []
        assert data[label]["methods"] == {"exact": "base_exact", "interp_1d": "linear_1d",
                                          "interp_2d": "simplex_2d", "interp_3d": "simplex_3d"}
    assert data["scaled"]["ingest_rows"] == 2 * data["base"]["ingest_rows"]
    assert "uncached 3-D (us)" in out
    base = data["base"]
    assert base["reingest_ratio"] == pytest.approx(base["reingest_s"] / base["ingest_s"])
    assert f"re-ingest of a changed v0.18: {base['reingest_ratio']:.2f}x its fresh ingest" in out
    # quick: the first measurement and one more round, each figure their median
    assert data["rounds"] == 2 and len(base["rounds"]) == 2
    for key in ("uncached_exact_us", "uncached_interp_1d_us", "regime_cached_1d_us"):
        first, again = (r[key] for r in base["rounds"])
        assert base[key] == pytest.approx((first + again) / 2)
    assert base["stream_us"]["max"] == max(r["stream_us"]["max"] for r in base["rounds"])
