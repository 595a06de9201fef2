"""The web explain page's answer (store/web/explain_page.py ``explain``), without a
browser: a regime miss shows its nearest measured regime as ``profstore explain`` does.

DynamicQuant.csv of v0.18, line 1367 (header = line 1): ``12,2048`` DT_FLOAT16 per-token,
Average Duration 5.617396 us; its regime holds 476 points (every DT_FLOAT16 -> INT8;FLOAT
row of the file, counted by hand with csv); no per-tensor float16 row.
"""

from __future__ import annotations

import pytest
from profstore.web.explain_page import explain

from tests.support.regimes import LEAF

pytestmark = pytest.mark.requires_perfdb


def test_the_page_lists_the_nearest_regime_of_a_regime_miss(perfdb_store):
    answer = explain(perfdb_store, "v0.18", LEAF, True)
    assert (answer.latency, answer.source, answer.reason) == ("-", "-", "regime_mismatch")
    sections = dict(answer.sections)
    first = sections["nearest measured regimes"][0]
    assert first == ("DynamicQuant: differs in scale_mode per_tensor → per_token; 476 points; "
                     "at the target: 5.617396 us MEASURED (exact_coordinate)")
    assert '"nearest_regimes"' in answer.json
