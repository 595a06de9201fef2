"""Real TensorCast ``OpInvokeInfo`` objects, built from torch tensors (``meta`` unless they
carry data, no memory format stated), for the leaves the runner does not reach in the
simulated steps: DispatchFFNCombine quant, the lightning-indexer attention leaf and dynamic
quantisation. Answers are checked against values read from the v0.18 CSVs."""

from __future__ import annotations

import pytest
from profstore.model.result import QuerySource
from profstore.tensorcast import ProfstoreDataSource

from tests.support.torch_fakes import csv_latency, dfc_quant, dynamic_quant, lightning_indexer
from tests.tensorcast.simulation import require_tensor_cast

pytestmark = pytest.mark.requires_perfdb


@pytest.fixture(scope="module")
def torch():
    require_tensor_cast()
    import torch as module

    return module


def tensor(torch):
    def make(shape, dtype, fmt=None, data=None):  # the format is dropped, as upstream's are
        kind = getattr(torch, dtype)
        if data is None:
            return torch.empty(shape, dtype=kind, device="meta")
        return torch.tensor(data, dtype=kind).reshape(shape)
    return make


def invocation(torch, build, op_name):
    from tensor_cast.performance_model.op_invoke_info import OpInvokeInfo

    fake = build(tensor(torch), lambda name: getattr(torch, name))
    func = getattr(torch.ops.tensor_cast, op_name).default
    return OpInvokeInfo(func, fake.args, fake.kwargs, fake.out)


@pytest.fixture(scope="module")
def source(perfdb_store):
    return ProfstoreDataSource(perfdb_store, "v0.18", ep_size=16, tp_size=1)


def test_dispatch_ffn_combine_quant(torch, source):
    result = source.lookup(invocation(torch, dfc_quant, "dispatch_ffn_combine_quant"))
    assert result is not None, source.last_miss_details
    # DispatchFFNCombine.csv lines 17 and 37 (64 tokens, EP 16): median of 646.232303 and
    # 659.445932; the NZ weight layout inferred from the rows
    assert (result.latency_us, result.source) == (pytest.approx(652.8391175),
                                                  QuerySource.MEASURED)
    assert result.details["format_source"] == "inferred"
    assert result.shape_match_info.kernel_shapes[:3] == [[64, 7168], [16, 7168, 4096],
                                                         [16, 2048, 7168]]


def test_dynamic_quantisation(torch, source):
    result = source.lookup(invocation(torch, dynamic_quant, "dynamic_quantize_symmetric"))
    assert result is not None, source.last_miss_details
    assert (result.latency_us, result.source) == (csv_latency(
        "DynamicQuant", Input_Shapes="2,7168", Input_Data_Types="DT_BF16",
        Output_Shapes="2,7168;2", Output_Data_Types="INT8;FLOAT"), QuerySource.MEASURED)


def test_lightning_indexer_takes_its_phase_and_lengths_from_the_invocation_or_context(
        torch, source, perfdb_store):
    op = invocation(torch, lightning_indexer, "quant_lightning_indexer")
    assert source.lookup(op) is None  # decode from is_decode_values
    decode = source.last_result
    # LightningIndexer.csv holds 21 decode rows at this coordinate whose latencies disagree,
    # and the kernel requires semantically unique rows: the per-request KV lengths decide
    assert decode.reason.value == "ambiguous_duplicates"
    assert "21 rows" in decode.details["attempted_kernels"][0]["message"]
    op.kwargs = {}  # no is_decode_values: the phase comes from the context, or nowhere
    assert source.lookup(op) is None
    assert source.last_miss_reason == "upstream_leaf_semantics_missing"
    told = ProfstoreDataSource(perfdb_store, "v0.18", ep_size=16, tp_size=1,
                               context={"phase": "decode"})
    assert told.lookup(op) is None and told.last_result.as_dict() == decode.as_dict()
    lengths = ProfstoreDataSource(perfdb_store, "v0.18", ep_size=16, tp_size=1,
                                  context={"phase": "decode", "kv_lens": [256]})
    assert lengths.lookup(op) is None
    assert "2 rows" in lengths.last_miss_details["attempted_kernels"][0]["message"]
