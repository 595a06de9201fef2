"""Packed latencies / extras JSON (migration 0005): the SQL that reads a packed column
back gives exactly the text ``json.dumps`` wrote, on the selected backend, for the
corpus's keys, unknown keys, and keys that contain a known key's spelling."""

from __future__ import annotations

import json

import pytest
from profstore.ingest.sql_writer import _PACKED_KEYS, latencies_json
from profstore.storage.engines import make_engine, upgrade
from profstore.storage.packed_json import (
    EXTRA_NAMES,
    LATENCY_NAMES,
    pack,
    pack_sql,
    unpack,
    unpacked,
)
from sqlalchemy import literal, select

from tests.support.perfdb import new_database

DOCUMENTS = [
    ({"Average Duration(us)": None, "Profiling Average Duration(us)": 4.973154,
      "Profiling Median Duration(us)": 4.955545, "Profiling Std Duration(us)": 0.156412},
     LATENCY_NAMES),
    ({"Duration(us)": 1e300, "Custom Duration(us)": float("nan"),
      'x"Average Duration(us)": y': -0.0}, LATENCY_NAMES),
    ({"EP Size": "16"}, EXTRA_NAMES),
    ({"Runtime phase": "decode", "Runtime note": 'a, "quoted" note; \u00e9\t',
      "Runtime operator_input_shapes_raw": "1,4,128;;2048,2048;1;;;",
      'Runtime phase": "prefill': "\x01"}, EXTRA_NAMES),
]


@pytest.mark.parametrize(("document", "names"), DOCUMENTS)
def test_packing_is_shorter_and_reads_back_as_the_same_text_in_sql(tmp_path, document, names):
    original = json.dumps(document)
    packed = pack(original, names)
    assert unpack(packed, names) == original
    known = sum(len(json.dumps(k)) + 1 for k in document if k in names)
    assert len(packed) == len(original) - known  # each known '"name": ' became one character
    engine = make_engine(new_database(tmp_path))
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(select(unpacked(literal(packed), names))).scalar() == original
        assert conn.execute(select(pack_sql(literal(original), names))).scalar() == packed
    engine.dispose()


def test_the_writer_packs_latencies_as_pack_does():
    for document, names in DOCUMENTS:
        if names is LATENCY_NAMES:
            assert latencies_json(document, _PACKED_KEYS) == pack(json.dumps(document), names)


def test_text_with_a_control_character_is_refused():
    with pytest.raises(ValueError, match="control characters"):
        pack('{"EP Size": "\x01"}', EXTRA_NAMES)
