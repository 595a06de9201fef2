"""Values one backend stores and another refuses, or that no backend stores, found by the
fuzzers: each ends as a rejection, a path refusal or a left-out inspection column, the
same way on SQLite and PostgreSQL, and never stops an ingest.

- a NUL byte (PostgreSQL text cannot hold one): the file is unreadable, its lines are
  kept with U+FFFD in its place;
- an HCCL ``num_devices`` beyond SQL INTEGER: the row is rejected (the column is what
  lookups match on);
- an ``EP Size`` beyond SQL INTEGER (but plausible as a number): the row is a point;
  its ``ep_size`` inspection column is NULL while its regime key keeps the value;
- an ``EP Size`` too long for ``int()``: the moe_fused path refuses the row.
"""

from __future__ import annotations

import json
from pathlib import Path

from profstore.ingest.loader import ingest_path
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import select

from tests.robustness import HUGE_INT
from tests.support.markers import requires_perfdb
from tests.support.paths import PERFDB
from tests.support.perfdb import (
    V18_DIR,
    Row,
    csv_text,
    mapping_doc,
    new_database,
    write_hccl,
    write_version,
)

DFC = PERFDB / "ATLAS_800_A3_752T_128G_DIE" / "vllm_ascend" / V18_DIR / "DispatchFFNCombine.csv"
DFC_OP = "tensor_cast.dispatch_ffn_combine.default"
BIG_EP = 2**40


def ingest_root(tmp_path: Path, root: Path):
    engine = make_engine(new_database(tmp_path))
    upgrade(engine)
    summaries = ingest_path(engine, root)
    return engine, summaries


def rms_rows() -> list[Row]:
    return [Row([[n, 64]], ["DT_BF16"], [[n, 64]], ["DT_BF16"], 2.0 * n) for n in (8, 16)]


def test_a_nul_byte_makes_the_file_unreadable_on_every_backend(tmp_path):
    text = csv_text(rms_rows())
    broken = text.replace("DT_BF16", "DT_\x00BF16", 1).encode()
    root = tmp_path / "data"
    version = write_version(root, {"RmsNorm": rms_rows()}, mapping_doc({}))
    (version / "Add.csv").write_bytes(broken)
    engine, [summary] = ingest_root(tmp_path, root)
    with engine.connect() as conn:
        rejected = conn.execute(select(t.rejected_row.c.line_no, t.rejected_row.c.reason_code,
                                       t.rejected_row.c.raw_text)).all()
    engine.dispose()
    assert (summary.rows_read, summary.rows_accepted) == (4, 2)
    assert [(line, code) for line, code, _ in rejected] == [(2, "unreadable_file"),
                                                            (3, "unreadable_file")]
    assert all("\x00" not in raw for _, _, raw in rejected)


def test_num_devices_beyond_sql_integer_is_a_rejected_row(tmp_path):
    root = tmp_path / "data"
    write_hccl(root, "hcom_allReduce_", [(1024, 10**20, "DT_BF16", 1, 30.5, 0.1),
                                         (1024, 16, "DT_BF16", 1, 31.0, 0.1)])
    engine, [summary] = ingest_root(tmp_path, root)
    with engine.connect() as conn:
        codes = conn.execute(select(t.rejected_row.c.reason_code)).scalars().all()
        devices = conn.execute(select(t.comm_sample.c.num_devices)).scalars().all()
    engine.dispose()
    assert (summary.rows_accepted, codes, devices) == (1, ["field_invalid"], [16])


@requires_perfdb
def test_an_ep_size_beyond_sql_integer_is_a_point_and_a_huge_one_is_refused(tmp_path):
    header, row = (line.rstrip("\r") for line in DFC.read_text().splitlines()[:8:7])
    assert row.endswith(",16")
    text = "\r\n".join([header, row[:-2] + str(BIG_EP), row[:-2] + HUGE_INT, ""])
    root = tmp_path / "data"
    write_version(root, {"DispatchFFNCombine": text},
                  mapping_doc({DFC_OP: {"kernel_type": "DispatchFFNCombine",
                                        "query_mode": "moe_fused"}}))
    engine, [summary] = ingest_root(tmp_path, root)
    p, r = t.sample_point.c, t.path_refusal.c
    with engine.connect() as conn:
        points = conn.execute(select(p.ep_size, p.regime_key).where(
            p.path == "moe_fused")).all()
        refusals = conn.execute(select(r.reason).where(r.path == "moe_fused")).scalars().all()
    engine.dispose()
    assert summary.rows_accepted == 2
    [(column, key)] = points
    assert (column, json.loads(key)["ep_size"]) == (None, BIG_EP)
    assert refusals == [f"required_field_missing: EP Size {HUGE_INT[:24]!r}… is too large"]
