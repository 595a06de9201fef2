"""The row writer's memo of regime keys and columns gives exactly the uncached values."""

from __future__ import annotations

import pytest
from profstore.ingest.sql_writer import COLUMNS, FLUSH_ORDER, RegimeMemo, regime_columns
from profstore.paths.base import Extraction
from profstore.storage import schema as t
from profstore.storage.schema import REGIME_COLUMNS

pytestmark = pytest.mark.no_database

LOOKALIKES = [
    {"kernel": "K", "ep_size": 16}, {"kernel": "K", "ep_size": 16.0},
    {"kernel": "K", "ep_size": True}, {"kernel": "K", "ep_size": 1},
    {"kernel": "K", "axis": 0.0}, {"kernel": "K", "axis": -0.0},
    {"kernel": "K", "shape": (1, 2)}, {"kernel": "K", "shape": [1.0, 2]},
    {"ep_size": 16, "kernel": "K"},
]


def test_memo_returns_the_key_and_columns_the_extraction_spells():
    memo = RegimeMemo()
    for regime in LOOKALIKES * 2:
        extraction = Extraction(regime, (1.0,))
        assert memo(extraction) == (extraction.regime_key, *regime_columns(regime))
    assert len({memo(Extraction(r, ())) for r in LOOKALIKES}) == 8


def test_regime_columns_fill_only_the_columns_a_regime_sets():
    values = regime_columns({"kernel": "K", "ep_size": 16.0, "topk": 8, "dtypes": ["A", "B"]})
    named = dict(zip(REGIME_COLUMNS, values))
    assert (named["ep_size"], named["topk"], named["dtypes"]) == (16, 8, '["A", "B"]')
    assert [v for k, v in named.items() if k not in ("ep_size", "topk", "dtypes")] == [None] * (
        len(REGIME_COLUMNS) - 3)


def test_the_writer_columns_name_real_columns_and_every_required_one():
    assert set(COLUMNS) <= {table.name for table in FLUSH_ORDER}
    for name, columns in COLUMNS.items():
        table = t.metadata.tables[name]
        assert len(set(columns)) == len(columns), name
        assert set(columns) <= set(table.c.keys()), name
        required = {c.name for c in table.c if not c.nullable and not c.primary_key}
        assert required <= set(columns), name
