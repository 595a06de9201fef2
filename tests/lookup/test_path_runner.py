"""store/lookup/path_runner.py: a regime miss's nearest regime, answered once per
coordinate for every miss that names it."""

from __future__ import annotations

from pathlib import Path

import pytest
from profstore import LeafOp, Store
from profstore.lookup.path_runner import PathRunner
from profstore.model.result import Reason

from tests.support.perfdb import build_database
from tests.support.rms_versions import CSV_LATENCY, HIDDEN, NORM, write


def norm(tokens: int, dtype: str, weight: str) -> LeafOp:
    return LeafOp.from_json({
        "op": NORM,
        "args": [{"shape": [tokens, HIDDEN], "dtype": dtype},
                 {"shape": [HIDDEN], "dtype": weight}, 1e-6],
        "outputs": [{"shape": [tokens, HIDDEN], "dtype": dtype}]})


def test_two_regime_misses_at_one_coordinate_answer_their_nearest_regime_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RmsNorm is measured in bfloat16 only (5.0, 6.0 and 9.0 µs at 4, 8 and 16 tokens).
    A float32 norm and a float32 norm with a bfloat16 weight are two regimes it lacks; each
    differs from the bfloat16 one in its dtypes alone, so both name it, at 6 tokens, where
    its line gives 5.0 + (6.0 - 5.0) * (6 - 4) / 4 = 5.5 µs. At 12 tokens it is answered
    again: 6.0 + (9.0 - 6.0) * (12 - 8) / 8 = 7.5 µs."""
    asked: list[tuple[float, ...]] = []
    answer_in = PathRunner._answer_in

    def counted(self: PathRunner, req: object, other: object) -> object:
        asked.append(tuple(other.axes))  # type: ignore[attr-defined]
        return answer_in(self, req, other)  # type: ignore[arg-type]

    monkeypatch.setattr(PathRunner, "_answer_in", counted)
    url = build_database(tmp_path, write(tmp_path / "data", CSV_LATENCY))
    with Store.open(url) as store:
        misses = [store.lookup(norm(tokens, "float32", weight), "v0.18")
                  for tokens, weight in ((6, "float32"), (6, "bfloat16"), (12, "float32"))]
    assert [m.reason for m in misses] == [Reason.REGIME_MISMATCH] * 3
    assert [m.details["target_regime"]["dtypes"] for m in misses] == [
        "FLOAT;FLOAT", "FLOAT;DT_BF16", "FLOAT;FLOAT"]
    nearest = [m.details["nearest_regimes"][0] for m in misses]
    assert [(n["regime"]["dtypes"], n["latency_us"], n["method"]) for n in nearest] == [
        ("DT_BF16;DT_BF16", 5.5, "linear_1d"), ("DT_BF16;DT_BF16", 5.5, "linear_1d"),
        ("DT_BF16;DT_BF16", 7.5, "linear_1d")]
    assert nearest[1]["differs"] == {"dtypes": ["FLOAT;DT_BF16", "DT_BF16;DT_BF16"]}
    assert asked == [(6.0,), (12.0,)]
