"""``ProfstoreDataSource(miss_codes="upstream")``: real lookups on a small fixture store,
each miss reported in the code TensorCast's own data source records for it.

Every expected code was read from upstream's source (``tensor_cast/performance_model/
profiling_database/`` of ../shared/third_party/msmodeling-84fec85); the comment above each
case names the file and function that records it. profstore's own code is asserted beside
it (``last_result.reason``), so a case also fails when the lookup itself changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from profstore.tensorcast import ProfstoreDataSource

from tests.support.perfdb import Row, build_database, mapping_doc, write_version
from tests.support.stores import opened_store

RMS = "tensor_cast.rms_norm.default"
ABSENT = "tensor_cast.absent_norm.default"
MM = "aten.mm.default"
MUL = "aten.mul.Tensor"
ADD = "aten.add.Tensor"
FUSED = "tensor_cast.fused.default"
INDEXER = "tensor_cast.lightning_indexer.default"
SCATTER = "tensor_cast.scatter_nd_update_mla.default"


@dataclass
class Tensor:
    shape: tuple[int, ...]
    dtype: str


@dataclass
class Op:
    func: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    out: Any = None


def t(*shape: int, dtype: str = "bfloat16") -> Tensor:
    return Tensor(tuple(shape), dtype)


def _rows() -> dict[str, list[Row]]:
    def rms(n: int, lat: float) -> Row:
        return Row([[n, 4096], [4096]], ["DT_BF16", "DT_BF16"], [[n, 4096]], ["DT_BF16"], lat)

    def mul(n: int, lat: float) -> Row:
        return Row([[n, 256], [n, 256]], ["DT_BF16", "DT_BF16"], [[n, 256]], ["DT_BF16"], lat)

    indexer = [Row([[q, 4, 64], [kv, 8], [1], [2]], ["DT_BF16", "INT32", "INT32", "INT32"],
                   [[q, 3]], ["INT32"], lat)
               for q, kv, lat in ((50, 32, 5.0), (90, 32, 9.0), (50, 96, 7.0))]
    scatter = [Row([[500, 64], [n, 1], [n, 64]], ["DT_BF16", "INT32", "DT_BF16"], [[500, 64]],
                   ["DT_BF16"], lat) for n, lat in ((16, 3.0), (48, 6.0))]
    return {"RmsNorm": [rms(8, 10.0), rms(16, 14.0)],
            "MatMulV2": [Row([[40, 128], [128, 512]], ["DT_BF16", "DT_BF16"], [[40, 512]],
                             ["DT_BF16"], 12.0)],
            "Mul": [mul(8, 4.0), mul(24, 6.0)], "Add": [mul(8, 4.0), mul(24, 6.0)],
            "LightningIndexer": indexer, "ScatterNdUpdate": scatter}


ENTRIES = {
    RMS: {"kernel_type": "RmsNorm"},
    ABSENT: {"kernel_type": "AbsentNorm"},
    MM: {"kernel_type": "MatMulV2"},
    MUL: {"kernel_type": "Mul", "query_mode": "elementwise"},
    ADD: {"kernel_type": "Add", "query_mode": "elementwise", "alternate_kernel_types": ["Sub"]},
    FUSED: {"composite": True, "sub_kernels": ["RmsNorm", "Absent"]},
    INDEXER: {"kernel_type": "LightningIndexer", "query_mode": "attention_lightning_indexer"},
    SCATTER: {"kernel_type": "ScatterNdUpdate", "query_mode": "scatter_nd_update_mla"},
}


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("miss_codes")
    write_version(tmp / "data", _rows(), mapping_doc(ENTRIES))
    return build_database(tmp)


store = opened_store("store_db", scope="module")


def rms(n: int, dtype: str = "bfloat16", op: str = RMS) -> Op:
    return Op(op, (t(n, 4096, dtype=dtype), t(4096, dtype=dtype), 1e-6), {},
              t(n, 4096, dtype=dtype))


def elementwise(op: str, n: int, dtype: str = "bfloat16") -> Op:
    return Op(op, (t(n, 256, dtype=dtype), t(n, 256, dtype=dtype)), {}, t(n, 256, dtype=dtype))


CASES = {
    # interpolating_data_source.py, InterpolatingDataSource._interpolate: no mapping entry
    "unmapped": (Op("aten.unknown.default", (t(4, 4),)), "unmapped", "wrapper_unmapped"),
    # _interpolate_generic_compute_target: no candidate group shares the regime (dtype)
    "generic regime": (rms(12, "float32"), "regime_mismatch", "regime_key_unmatched"),
    # interpolation_index.py, CandidateGroup.interpolate (status reported by
    # _candidate_failure_reason): the target beyond the measured range
    "generic range": (rms(32), "outside_range", "outside_axis_boundary"),
    # _interpolate_generic_compute_target: no index for the kernel
    "generic csv": (rms(12, op=ABSENT), "csv_not_found", "compute_csv_not_found"),
    # _interpolate_compute_multidim: a matmul kernel's miss, whatever its cause
    "matmul": (Op(MM, (t(60, 128), t(128, 512)), {}, t(60, 512)), "insufficient_candidates",
               "compute_multidim_interpolation_failed"),
    # _interpolate_elementwise_kernel: no group matching the regime is a shortage
    "elementwise regime": (elementwise(MUL, 16, "float32"), "regime_mismatch",
                           "insufficient_filtered_candidates"),
    # CandidateGroup.interpolate on the elementwise path (one kernel: no wrapping)
    "elementwise range": (elementwise(MUL, 40), "outside_range", "outside_axis_boundary"),
    # _interpolate_elementwise: more than one kernel type tried (Add, then Sub)
    "elementwise alternates": (elementwise(ADD, 40), "outside_range",
                               "elementwise_interpolation_failed"),
    # _interpolate_composite: a sub-kernel without a latency
    "composite": (rms(8, op=FUSED), "partial_composite", "composite_sub_kernel_failed"),
    # InterpolatingDataSource._interpolate: a LightningIndexer leaf without runtime semantics
    "indexer leaf": (Op(INDEXER, (t(70, 4, 64), t(40, 8, dtype="int32"), t(1, dtype="int32"),
                                  t(2, dtype="int32")), {}, t(70, 3, dtype="int32")),
                     "upstream_leaf_semantics_missing", "runtime_attention_leaf_required"),
    # _interpolate_scatter_nd_update: the target cannot be built (a scalar update); the
    # attempt has no diagnostics, so _candidate_failure_reason gives the path's default
    "scatter target": (Op(SCATTER, (t(500, 64), t(1, dtype="int32"), t()), {}, t(500, 64)),
                       "target_unavailable", "scatter_nd_update_interpolation_failed"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_upstream_code_per_miss(store, case):
    op, ours, theirs = CASES[case]
    source = ProfstoreDataSource(store, "v0.18", ep_size=16, tp_size=1, miss_codes="upstream")
    assert source.lookup(op) is None
    assert (source.last_result.reason.value, source.last_miss_reason) == (ours, theirs)
    assert source.last_miss_details["profstore_reason"] == ours
    assert source.last_shape_match_info.shape_match_rule == theirs


@pytest.mark.parametrize("case", list(CASES))
def test_profstore_codes_by_default(store, case):
    op, ours, _ = CASES[case]
    source = ProfstoreDataSource(store, "v0.18", ep_size=16, tp_size=1)
    assert source.lookup(op) is None
    assert source.last_miss_reason == ours
    assert "profstore_reason" not in source.last_miss_details


# profiling_data_source.py, ProfilingDataSource.lookup and its CSV query: the exact-only
# source says "unmapped" without an entry and "shape_mismatch" when no row has the shapes
@pytest.mark.parametrize(("op", "ours", "theirs"), [
    (Op("aten.unknown.default", (t(4, 4),)), "unmapped", "unmapped"),
    (rms(12), "no_exact_match", "shape_mismatch"),
    (rms(12, op=ABSENT), "csv_not_found", "csv_not_found"),
])
def test_exact_only_source_speaks_the_base_codes(store, op, ours, theirs):
    source = ProfstoreDataSource(store, "v0.18", interpolation=False, miss_codes="upstream")
    assert source.lookup(op) is None
    assert (source.last_result.reason.value, source.last_miss_reason) == (ours, theirs)


def test_a_hit_clears_the_code(store):
    source = ProfstoreDataSource(store, "v0.18", miss_codes="upstream")
    assert source.lookup(rms(32)) is None
    assert source.lookup(rms(12)).latency_us == pytest.approx(12.0)
    assert source.last_miss_reason is None


@pytest.mark.parametrize("value", ["TensorCast", "", None, "PROFSTORE"])
def test_other_styles_are_refused(store, value):
    with pytest.raises(ValueError, match=r"miss_codes must be one of 'profstore', 'upstream'"):
        ProfstoreDataSource(store, "v0.18", miss_codes=value)
