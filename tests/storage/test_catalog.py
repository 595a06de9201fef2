"""The version catalog on the readers' fixture (tests/storage/conftest.py): counts from
its CSV files, written there by hand."""

from __future__ import annotations

import pytest
from profstore.storage.catalog import (
    all_versions,
    find_profile,
    has_comm_samples,
    hccl_profile_id,
    interpolation_policies,
    known_aliases,
    latest_operator_alias,
    profile_by_id,
)

from tests.support.perfdb import DEVICE, V18_DIR


def test_a_version_is_found_by_alias_and_by_directory(conn):
    by_alias, by_directory = find_profile(conn, "v0.18"), find_profile(conn, V18_DIR)
    assert by_alias is not None and by_alias == by_directory
    # RmsNorm.csv 8 data lines (1 NaN), Add.csv 3 (1 cut short), Range.csv 1
    assert (by_alias.alias, by_alias.framework, by_alias.device, by_alias.files,
            by_alias.rows_read, by_alias.rows_accepted, by_alias.rows_rejected) == (
        "v0.18", "vllm_ascend", DEVICE, 3, 12, 10, 2)
    assert find_profile(conn, "v9.9") is None


def test_versions_in_ingest_order(conn):
    versions = all_versions(conn)
    assert {v.framework for v in versions} == {"vllm_ascend", "hccl"}
    assert [v.alias for v in versions] == known_aliases(conn)
    assert [v.id for v in versions] == sorted(v.id for v in versions)
    assert [profile_by_id(conn, v.id) for v in versions] == versions


def test_an_unknown_profile_id_is_a_lookup_error(conn):
    with pytest.raises(LookupError, match="no profile_set row with id 987654"):
        profile_by_id(conn, 987654)


def test_the_default_version_is_the_operator_set(conn):
    assert latest_operator_alias(conn) == "v0.18"


def test_the_hccl_profile_of_a_device_and_directory(conn, v18):
    hccl = hccl_profile_id(conn, DEVICE, "v8.5")
    assert hccl is not None and hccl != v18
    assert profile_by_id(conn, hccl).framework == "hccl"
    assert hccl_profile_id(conn, "OTHER_DEVICE", "v8.5") is None
    assert hccl_profile_id(conn, DEVICE, "v9.0") is None
    assert (has_comm_samples(conn, hccl), has_comm_samples(conn, v18)) == (True, False)


def test_the_stored_interpolation_override(conn, v18):
    [policy] = interpolation_policies(conn, v18)
    assert (policy.kernel_type, policy.max_interpolation_dim) == ("RmsNorm", 1)
