"""Issue #16 items 6 and 7: YAML bombs and deep nesting are refused fast as a
``mapping_problem`` with a reason; an op_mapping.yaml that is a Git LFS pointer or cannot
be parsed fails its version (exit 1, one line naming the file) unless
``--allow-missing-mapping``, and the other versions still ingest."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from profstore.cli.main import main
from profstore.model.mapping import MappingError, load_mapping

from tests.support.perfdb import DEVICE, V18_DIR, Row, mapping_doc, write_version

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n"
    for i in range(8)) + "operator_mappings: {}\n"
"""Nine levels of ten aliases: 10^9 nodes from under 1 KB of text."""
DEEP = "operator_mappings:\n  x: " + "[" * 500 + "]" * 500 + "\n"
LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
               "size 18734\n")
ROWS = [Row([[8, 7168], [7168]], ["DT_BF16"] * 2, [[8, 7168]], ["DT_BF16"], 10.0)]


@pytest.mark.no_database
def test_a_billion_laughs_is_refused_with_a_reason():
    assert len(LAUGHS) < 1024
    with pytest.raises(MappingError) as caught:
        load_mapping(LAUGHS, is_text=True)
    assert str(caught.value) == ("<text>: aliases expand to more than 1000000 nodes (line 6); "
                                 "refused")


@pytest.mark.no_database
def test_nesting_past_the_depth_limit_is_refused_with_a_reason():
    with pytest.raises(MappingError) as caught:
        load_mapping(DEEP, is_text=True)
    assert str(caught.value) == "<text>: nesting deeper than 64 levels at line 2; refused"


@pytest.mark.no_database
def test_aliases_within_the_budget_still_load():
    text = ("defaults: &d {kernel_type: RmsNorm}\n"
            "operator_mappings:\n  tensor_cast.rms_norm.default: *d\n")
    mapping = load_mapping(text, is_text=True)
    assert mapping.entries["tensor_cast.rms_norm.default"].kernel_type == "RmsNorm"


def two_versions(root: Path, bad_mapping: str) -> None:
    """v0.18 with ``bad_mapping`` and v0.19 with a good one."""
    write_version(root, {"RmsNorm": ROWS}, bad_mapping)
    write_version(root, {"RmsNorm": ROWS},
                  mapping_doc({"tensor_cast.rms_norm.default": {"kernel_type": "RmsNorm"}}),
                  directory="vllm0.19.0_torch2.9.0_cann8.5")


def aliases(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [a for (a,) in conn.execute("SELECT alias FROM profile_set ORDER BY alias")]


@pytest.mark.sqlite_only
@pytest.mark.parametrize(("text", "reason"), [
    (LFS_POINTER, "op_mapping.yaml is a Git LFS pointer, not its content; run git lfs pull"),
    ("operator_mappings: [unclosed\n", "op_mapping.yaml refused: <text>: broken YAML at line 2"),
    (LAUGHS, "op_mapping.yaml refused: <text>: aliases expand to more than 1000000 nodes"),
    (DEEP, "op_mapping.yaml refused: <text>: nesting deeper than 64 levels at line 2"),
], ids=["lfs", "broken", "laughs", "deep"])
def test_an_unusable_mapping_fails_its_version_and_the_others_ingest(capsys, tmp_path, text,
                                                                     reason):
    root, db = tmp_path / "data", tmp_path / "s.db"
    two_versions(root, text)
    assert main(["ingest", str(root), "--db", str(db)]) == 1
    out, _ = capsys.readouterr()
    failed, ingested = out.splitlines()
    mapping_file = root / DEVICE / "vllm_ascend" / V18_DIR / "op_mapping.yaml"
    assert failed.startswith(f"v0.18: not ingested: {mapping_file}: {reason}")
    assert failed.endswith("; pass --allow-missing-mapping to ingest the version without it")
    assert ingested.startswith("v0.19: 1 files, 1 rows read, 1 accepted, 0 rejected")
    assert aliases(db) == ["v0.19"]


@pytest.mark.sqlite_only
def test_allow_missing_mapping_ingests_the_version_with_the_mapping_rejected(capsys, tmp_path):
    root, db = tmp_path / "data", tmp_path / "s.db"
    two_versions(root, LFS_POINTER)
    assert main(["ingest", str(root), "--db", str(db), "--allow-missing-mapping"]) == 0
    capsys.readouterr()
    assert aliases(db) == ["v0.18", "v0.19"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT file_name, reason_code, reason FROM rejected_row").fetchall() \
            == [("op_mapping.yaml", "lfs_pointer",
                 "op_mapping.yaml is a Git LFS pointer, not its content; run git lfs pull")]
