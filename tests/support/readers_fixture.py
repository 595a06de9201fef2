"""The storage readers' fixture: tests/cli's hand-computable version (v0.18: RmsNorm with
a duplicate coordinate and a NaN row, Add with a broken line, Range refused by the generic
path; tests.support.cli_fixture) with an interpolation override for RmsNorm and a small
HCCL set its mapping points at (tests/storage/conftest.py ingests it)."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli_fixture import RMS_OP, fixture_kernels
from tests.support.perfdb import mapping_doc, write_hccl, write_version

ALL_REDUCE = "hcom_allReduce_"
ALL_REDUCE_ROWS = [  # message_bytes, num_devices, dtype, topology_tier, Duration(us), bandwidth
    (1000, 4, "DT_BF16", 1, 10.0, 0.1), (2000, 4, "DT_BF16", 1, 14.0, 0.1),
    (1000, 8, "DT_BF16", 1, 20.0, 0.1),
]
RMS_OVERRIDE = {"kernel_overrides": {"RmsNorm": {"max_interpolation_dim": 1}}}


def write_readers_fixture(root: Path) -> Path:
    data = root / "data"
    write_version(data, fixture_kernels(),
                  mapping_doc({RMS_OP: {"kernel_type": "RmsNorm"}},
                              communication_data_ref="../../hccl/v8.5/",
                              interpolation_policy=RMS_OVERRIDE))
    write_hccl(data, ALL_REDUCE, ALL_REDUCE_ROWS)
    return data
