"""Each revision 0002-0006 upgrades a database built and filled at its predecessor, on
SQLite and on PostgreSQL (this folder runs in both passes).

The rows are inserted by hand in revision 0001's layout (not by today's ingest), so every
expected value below is derived from them by hand: the regime ids 0004 gives (in the order
of each regime's first point), the packed JSON 0005 writes (``chr(1 + position)`` of a
key in 0005's name lists), the key order of 0005's ``sample_key`` and the bytes of 0006's
``regime_points`` (little-endian; integers in 1 or 2 bytes, coordinates as integers when
all are whole, float64 otherwise). ``profstore.storage.regime_pack.decode`` then reads the
packs, as a lookup does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from profstore.storage import schema as t
from profstore.storage.engines import alembic_config, current_revision
from profstore.storage.regime_pack import READ_COLUMNS, decode
from sqlalchemy import Engine, create_engine, inspect, select, text

from tests.support import perfdb
from tests.support.migrations import sqlite_url

AD, PAD = "Average Duration(us)", "Profiling Average Duration(us)"
RMS_KEY, ADD_KEY, HALF_KEY = '{"r": "rms"}', '{"r": "add"}', '{"r": "half"}'

PROFILE = {"id": 1, "alias": "v0.18", "device": "D", "framework": "vllm_ascend",
           "directory": "vllm0.18.0", "source_path": "/data/v0.18", "content_hash": "h",
           "ingested_at": "2026-12-01T00:00:00Z", "files": 2, "rows_read": 6,
           "rows_accepted": 6, "rows_rejected": 0}
FILES = [(1, "RmsNorm", "RmsNorm.csv"), (2, "Add", "Add.csv")]
SAMPLES = [  # id, file, kernel, line, latencies JSON, extras JSON, latency, latency column
    (1, 1, "RmsNorm", 2, '{"Average Duration(us)": 10.0}',
     '{"EP Size": "16", "Runtime phase": "decode"}', 10.0, AD),
    (2, 1, "RmsNorm", 3, '{"Average Duration(us)": 12.0}', "{}", 12.0, AD),
    (3, 1, "RmsNorm", 4, '{"Average Duration(us)": 16.0}', '{"Runtime unknown_key": "x"}',
     16.0, AD),
    (4, 2, "Add", 2, '{"Average Duration(us)": null, "Profiling Average Duration(us)": 1.5}',
     "{}", 1.5, PAD),
    (5, 2, "Add", 3, '{"Average Duration(us)": 2.5}', "{}", 2.5, AD),
    (6, 2, "Add", 4, '{"Average Duration(us)": 3.5}', "{}", 3.5, AD),
]
KEYS = [  # id, sample, exact key (0001 copies kernel and latency from the sample)
    (1, 1, "x1|1,7168:DT_BF16"), (2, 2, "x1|2,7168:DT_BF16"), (3, 3, "x1|4,7168:DT_BF16"),
    (4, 5, "x2|4,64:FLOAT"), (5, 4, "x2|4,64:FLOAT"), (6, 6, "x2|4,64:FLOAT"),
]
POINTS = [  # id, sample, path, regime key, input_count, dtypes, semantic key, axes
    (1, 1, "generic", RMS_KEY, 2, "DT_BF16", None, (1.0, 7168.0, None)),
    (2, 2, "generic", RMS_KEY, 2, "DT_BF16", None, (2.0, 7168.0, None)),
    (3, 3, "generic", RMS_KEY, 2, "DT_BF16", None, (4.0, 7168.0, None)),
    (4, 5, "generic", ADD_KEY, 2, "FLOAT", "phase=decode", (4.0, None, None)),
    (5, 4, "generic", ADD_KEY, 2, "FLOAT", None, (4.0, None, None)),
    (6, 6, "generic", ADD_KEY, 2, "FLOAT", "phase=decode", (4.0, None, None)),
    (7, 5, "special", HALF_KEY, 1, "FLOAT", None, (0.5, None, None)),
]

REGIMES_VIEW = [  # version, kernel, path, key, points, latency columns, axis min/max x 3
    ("v0.18", "Add", "generic", ADD_KEY, 3, 2, 4.0, 4.0, None, None, None, None),
    ("v0.18", "Add", "special", HALF_KEY, 1, 1, 0.5, 0.5, None, None, None, None),
    ("v0.18", "RmsNorm", "generic", RMS_KEY, 3, 1, 1.0, 4.0, 7168.0, 7168.0, None, None),
]
DUPLICATES_VIEW = [  # Add at 4 in "Average Duration(us)": lines 3 and 4, 2.5 and 3.5
    ("v0.18", "Add", "generic", ADD_KEY, 4.0, None, None, AD, 2, 2.5, 3.0, 3.5, 3),
]
COUNTS = {"profile_set": 1, "kernel_file": 2, "sample": 6, "sample_key": 6, "sample_point": 7}


def _fill_0001(engine: Engine) -> None:
    """The rows above in revision 0001's layout."""
    latency = {s[0]: (s[6], s[7]) for s in SAMPLES}
    kernel = {s[0]: s[2] for s in SAMPLES}
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO profile_set (" + ", ".join(PROFILE) + ") VALUES ("
                          + ", ".join(f":{c}" for c in PROFILE) + ")"), PROFILE)
        conn.execute(text(
            "INSERT INTO kernel_file (id, profile_id, kernel_type, file_name, file_hash, "
            "columns, rows_read, rows_accepted, rows_rejected) "
            "VALUES (:id, 1, :kernel, :name, 'h', '[]', 3, 3, 0)"),
            [{"id": i, "kernel": k, "name": n} for i, k, n in FILES])
        conn.execute(text(
            "INSERT INTO sample (id, profile_id, kernel_file_id, kernel_type, line_no, "
            "raw_text, input_shapes, input_dtypes, input_formats, output_shapes, "
            "output_dtypes, output_formats, latencies, extras, latency_us, latency_column) "
            "VALUES (:id, 1, :file, :kernel, :line, 'raw', '[]', '[]', '[]', '[]', '[]', "
            "'[]', :latencies, :extras, :latency, :column)"),
            [dict(zip(("id", "file", "kernel", "line", "latencies", "extras", "latency",
                       "column"), s)) for s in SAMPLES])
        conn.execute(text(
            "INSERT INTO sample_key (id, profile_id, sample_id, kernel_type, exact_key, "
            "latency_us, latency_column) VALUES (:id, 1, :sample, :kernel, :key, :latency, "
            ":column)"),
            [{"id": i, "sample": s, "kernel": kernel[s], "key": k, "latency": latency[s][0],
              "column": latency[s][1]} for i, s, k in KEYS])
        conn.execute(text(
            "INSERT INTO sample_point (id, profile_id, sample_id, kernel_type, path, "
            "regime_key, input_count, dtypes, semantic_key, axis_0, axis_1, axis_2, "
            "latency_us, latency_column) VALUES (:id, 1, :sample, :kernel, :path, :key, "
            ":inputs, :dtypes, :semantic, :a0, :a1, :a2, :latency, :column)"),
            [{"id": i, "sample": s, "kernel": kernel[s], "path": p, "key": k, "inputs": n,
              "dtypes": d, "semantic": m, "a0": a[0], "a1": a[1], "a2": a[2],
              "latency": latency[s][0], "column": latency[s][1]}
             for i, s, p, k, n, d, m, a in POINTS])


@pytest.fixture()
def database_at(tmp_path: Path):
    """``database_at(revision)``: the URL of a database built by revisions 0001..revision,
    holding the rows above (inserted at 0001, carried by the revisions since)."""
    def build(revision: str) -> str:
        url = (perfdb.new_empty_database() if perfdb.on_postgresql()
               else sqlite_url(tmp_path / f"at_{revision}.db"))
        command.upgrade(alembic_config(url), "0001")
        engine = create_engine(url)
        _fill_0001(engine)
        engine.dispose()
        command.upgrade(alembic_config(url), revision)
        return url
    return build


def _upgraded(url: str, revision: str) -> Engine:
    command.upgrade(alembic_config(url), revision)
    engine = create_engine(url)
    assert current_revision(engine) == revision
    return engine


def _rows(engine: Engine, sql: str) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def _counts(engine: Engine) -> dict[str, int]:
    return {name: _rows(engine, f"SELECT COUNT(*) FROM {name}")[0][0] for name in COUNTS}


def _views(engine: Engine) -> tuple[list[tuple], list[tuple]]:
    return (_rows(engine, "SELECT * FROM regimes ORDER BY 1, 2, 3, 4"),
            _rows(engine, "SELECT * FROM duplicates ORDER BY 1, 2, 3, 4, 5"))


def test_0002_on_a_filled_0001_database(database_at):
    engine = _upgraded(database_at("0001"), "0002")
    assert _counts(engine) == COUNTS
    assert _views(engine) == (REGIMES_VIEW, DUPLICATES_VIEW)
    assert _rows(engine, "SELECT alias, directory FROM profile_set") == [
        ("v0.18", "vllm0.18.0")]
    alias = {c["name"]: c["type"] for c in inspect(engine).get_columns("profile_set")}["alias"]
    # PostgreSQL: VARCHAR(64) became TEXT; SQLite: unchanged
    expected = "TEXT" if perfdb.on_postgresql() else "VARCHAR(64)"
    assert str(alias) == expected
    with engine.begin() as conn:  # longer than 0001's VARCHAR(256), on both backends now
        conn.execute(text("UPDATE profile_set SET directory = :d"), {"d": "v" * 300})
    assert _rows(engine, "SELECT LENGTH(directory) FROM profile_set") == [(300,)]
    engine.dispose()


def test_0003_on_a_filled_0002_database(database_at):
    engine = _upgraded(database_at("0002"), "0003")
    assert _counts(engine) == COUNTS
    found = inspect(engine)
    for table in ("sample_key", "sample_point", "path_refusal"):
        indexes = {ix["name"]: ix["column_names"] for ix in found.get_indexes(table)}
        assert indexes[f"ix_{table}_sample"] == ["sample_id"]
    assert _views(engine) == (REGIMES_VIEW, DUPLICATES_VIEW)
    engine.dispose()


def test_0004_on_a_filled_0003_database(database_at):
    engine = _upgraded(database_at("0003"), "0004")
    assert _counts(engine) == COUNTS
    # one regime per (kernel, path, key), numbered in the order of its first point (1, 4, 7)
    assert _rows(engine, "SELECT id, profile_id, kernel_type, path, regime_key, input_count, "
                         "dtypes, ep_size FROM regime ORDER BY id") == [
        (1, 1, "RmsNorm", "generic", RMS_KEY, 2, "DT_BF16", None),
        (2, 1, "Add", "generic", ADD_KEY, 2, "FLOAT", None),
        (3, 1, "Add", "special", HALF_KEY, 1, "FLOAT", None)]
    assert _rows(engine, "SELECT id, regime_id, sample_id, kernel_type, latency_us "
                         "FROM sample_point ORDER BY id") == [
        (1, 1, 1, "RmsNorm", 10.0), (2, 1, 2, "RmsNorm", 12.0), (3, 1, 3, "RmsNorm", 16.0),
        (4, 2, 5, "Add", 2.5), (5, 2, 4, "Add", 1.5), (6, 2, 6, "Add", 3.5),
        (7, 3, 5, "Add", 2.5)]
    columns = {c["name"] for c in inspect(engine).get_columns("sample_point")}
    assert "regime_id" in columns and not columns & {"input_count", "dtypes", "ep_size"}
    assert _views(engine) == (REGIMES_VIEW, DUPLICATES_VIEW)
    engine.dispose()


def test_0005_on_a_filled_0004_database(database_at):
    engine = _upgraded(database_at("0004"), "0005")
    assert _counts(engine) == COUNTS
    # latency keys: "Average Duration(us)" -> \x01, "Profiling Average Duration(us)" -> \x02;
    # extra keys: "Runtime phase" (3rd) -> \x03, "EP Size" (27th) -> \x1b; unknown keys stay
    assert _rows(engine, "SELECT id, latencies_packed, extras_packed FROM sample "
                         "ORDER BY id") == [
        (1, "{\x0110.0}", '{\x1b"16", \x03"decode"}'),
        (2, "{\x0112.0}", "{}"),
        (3, "{\x0116.0}", '{"Runtime unknown_key": "x"}'),
        (4, "{\x01null, \x021.5}", "{}"),
        (5, "{\x012.5}", "{}"),
        (6, "{\x013.5}", "{}")]
    columns = {c["name"] for c in inspect(engine).get_columns("sample")}
    assert not columns & {"latencies", "extras"}
    with engine.connect() as conn:  # read back through today's unpacking: the JSON inserted
        unpacked = conn.execute(select(t.sample.c.id, t.sample.c.latencies, t.sample.c.extras)
                                .order_by(t.sample.c.id)).all()
    assert [tuple(r) for r in unpacked] == [(s[0], s[4], s[5]) for s in SAMPLES]
    # keys in primary-key order (kernel file, key, sample), each with its 0004 id
    assert _rows(engine, "SELECT kernel_file_id, exact_key, sample_id, profile_id, id "
                         "FROM sample_key ORDER BY kernel_file_id, exact_key, sample_id") == [
        (1, "x1|1,7168:DT_BF16", 1, 1, 1), (1, "x1|2,7168:DT_BF16", 2, 1, 2),
        (1, "x1|4,7168:DT_BF16", 3, 1, 3), (2, "x2|4,64:FLOAT", 4, 1, 5),
        (2, "x2|4,64:FLOAT", 5, 1, 4), (2, "x2|4,64:FLOAT", 6, 1, 6)]
    assert {c["name"] for c in inspect(engine).get_columns("sample_point")} == {
        "id", "profile_id", "sample_id", "semantic_key", "axis_0", "axis_1", "axis_2",
        "regime_id"}
    assert _rows(engine, "SELECT id, regime_id, sample_id, semantic_key, axis_0, axis_1 "
                         "FROM sample_point ORDER BY id") == [
        (1, 1, 1, None, 1.0, 7168.0), (2, 1, 2, None, 2.0, 7168.0),
        (3, 1, 3, None, 4.0, 7168.0), (4, 2, 5, "phase=decode", 4.0, None),
        (5, 2, 4, None, 4.0, None), (6, 2, 6, "phase=decode", 4.0, None),
        (7, 3, 5, None, 0.5, None)]
    assert _views(engine) == (REGIMES_VIEW, DUPLICATES_VIEW)
    engine.dispose()


F64 = {1.5: "000000000000f83f", 2.5: "0000000000000440", 3.5: "0000000000000c40",
       10.0: "0000000000002440", 12.0: "0000000000002840", 16.0: "0000000000003040",
       0.5: "000000000000e03f"}
"""IEEE 754 float64, little-endian, of the values inserted (worked out by hand)."""


def _f64(*values: float) -> bytes:
    return bytes.fromhex("".join(F64[v] for v in values))


PACKS = [
    # RmsNorm: points by axis_0 (1, 2, 4); axes whole and below 2**16: 2 bytes each
    (1, 1, 3, 2, bytes.fromhex("0100" "001c" "0200" "001c" "0400" "001c"),
     _f64(10.0, 12.0, 16.0), bytes.fromhex("010203"), bytes.fromhex("020304"),
     f'["{AD}"]', None, '["RmsNorm.csv"]', None, "[null]", None),
    # Add generic: all at 4; by latency column ("Average…" before "Profiling…"), then by
    # latency: samples 5 (2.5), 6 (3.5), 4 (1.5); semantic keys sorted None first
    (2, 1, 3, 1, bytes.fromhex("040404"), _f64(2.5, 3.5, 1.5), bytes.fromhex("050604"),
     bytes.fromhex("030402"), f'["{AD}", "{PAD}"]', bytes.fromhex("000001"), '["Add.csv"]',
     None, '[null, "phase=decode"]', bytes.fromhex("010100")),
    # Add special: one point at 0.5, not whole: float64
    (3, 1, 1, 1, _f64(0.5), _f64(2.5), bytes.fromhex("05"), bytes.fromhex("03"),
     f'["{AD}"]', None, '["Add.csv"]', None, "[null]", None),
]


def test_0006_on_a_filled_0005_database(database_at):
    engine = _upgraded(database_at("0005"), "0006")
    assert _counts(engine) == COUNTS
    with engine.connect() as conn:
        found = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
                 for r in conn.execute(text(
                     "SELECT regime_id, profile_id, points, width, axes, latency_us, "
                     "sample_ids, line_nos, latency_columns, latency_column_codes, "
                     "kernel_files, kernel_file_codes, semantic_keys, semantic_codes "
                     "FROM regime_points ORDER BY regime_id"))]
        stored = conn.execute(select(*[t.regime_points.c[c] for c in READ_COLUMNS])
                              .order_by(t.regime_points.c.regime_id)).all()
    engine.dispose()
    assert found == PACKS
    # today's reader (a lookup's) gets the points back: (axes, latency, line, file, semantic)
    read = [[(m.axes, m.latency_us, m.line_no, m.file_name, m.semantic)
             for m in decode(tuple(r)).rows] for r in stored]
    assert read == [
        [((1.0, 7168.0), 10.0, 2, "RmsNorm.csv", None),
         ((2.0, 7168.0), 12.0, 3, "RmsNorm.csv", None),
         ((4.0, 7168.0), 16.0, 4, "RmsNorm.csv", None)],
        [((4.0,), 2.5, 3, "Add.csv", "phase=decode"), ((4.0,), 3.5, 4, "Add.csv", "phase=decode"),
         ((4.0,), 1.5, 2, "Add.csv", None)],
        [((0.5,), 2.5, 3, "Add.csv", None)]]
