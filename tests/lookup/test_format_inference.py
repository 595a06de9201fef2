"""store/lookup/format_inference.py: which formats a lookup tries for tensors that state none."""

from __future__ import annotations

from typing import Any

import pytest
from profstore import LeafOp, Store
from profstore.model.result import QuerySource
from profstore.paths.attention_fia import FusedInferAttentionPath

from tests.support.fia import decode, make_db, unstated


def test_a_path_whose_target_reads_no_format_extracts_the_target_once(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The FusedInferAttentionScore rows hold two formats, ND and NULL (absent inputs), so
    an attention leaf whose six tensors state none would be tried in each, one tensor at
    a time (seven extractions). Its path reads no format: the target is extracted once, at
    ND, and the decode row at seq 1024, batch 1 answers its 20.0 µs."""
    extracted: list[LeafOp] = []
    target_regime = FusedInferAttentionPath.target_regime

    def counted(self: FusedInferAttentionPath, leaf: LeafOp, ctx: Any) -> Any:
        extracted.append(leaf)
        return target_regime(self, leaf, ctx)

    monkeypatch.setattr(FusedInferAttentionPath, "target_regime", counted)
    leaf = unstated(decode(1024))
    assert all(t.format is None for t in leaf.tensor_inputs())
    with Store.open(make_db(tmp_path)) as store:
        result = store.lookup(leaf, "v0.18")
    assert (result.latency_us, result.source) == (20.0, QuerySource.MEASURED)
    assert len(extracted) == 1
    assert {t.format for t in extracted[0].tensor_inputs()} == {"ND"}
