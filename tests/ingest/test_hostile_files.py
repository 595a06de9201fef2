"""Issue #16 item 8: every data-named entry of a version directory is accounted for.

Symlinks are followed (a loop or a dangling link is a refused file with the reason),
a FIFO or a directory named ``*.csv`` is refused without being opened, names that differ
only by case are a conflict whose rows are all rejected, a device directory reached
again through a symlink is ingested once, and an empty version directory is named."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from profstore.cli.main import main

from tests.support.perfdb import DEVICE, V18_DIR, Row, csv_text, write_version

pytestmark = pytest.mark.sqlite_only


def rms(tokens: int, latency: float) -> Row:
    return Row([[tokens, 7168], [7168]], ["DT_BF16"] * 2, [[tokens, 7168]], ["DT_BF16"], latency)


@pytest.fixture()
def oddities(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    folder = write_version(root, {"Good": [rms(8, 10.0), rms(16, 14.0)]})
    (folder / "Linked.csv").symlink_to("Good.csv")
    (folder / "Loop.csv").symlink_to("Loop.csv")
    (folder / "Dangling.csv").symlink_to("gone.csv")
    os.mkfifo(folder / "Pipe.csv")
    (folder / "Folder.csv").mkdir()
    (folder / "RmsNorm.csv").write_text(csv_text([rms(8, 1.0)]))
    (folder / "rmsnorm.csv").write_text(csv_text([rms(8, 2.0), rms(16, 3.0)]))
    (root / "ALIAS_DEVICE").symlink_to(DEVICE)
    (root / DEVICE / "vllm_ascend" / "vllm0.19.0_torch2.9.0_cann8.5").mkdir()
    return root


def ingest(capsys, root: Path, db: Path) -> tuple[int, list[str]]:
    code = main(["ingest", str(root), "--db", str(db)])
    return code, capsys.readouterr().out.splitlines()


def test_every_entry_is_accounted_for(capsys, oddities, tmp_path):
    db = tmp_path / "s.db"
    code, lines = ingest(capsys, oddities, db)
    assert code == 0
    version = oddities / DEVICE / "vllm_ascend"
    assert lines[0] == (f"{DEVICE}/vllm0.19.0_torch2.9.0_cann8.5: empty version directory "
                        f"{version / 'vllm0.19.0_torch2.9.0_cann8.5'}: no CSV files, nothing "
                        "ingested")
    linked = oddities / "ALIAS_DEVICE" / "vllm_ascend" / V18_DIR
    assert lines[1] == (f"ALIAS_DEVICE/{V18_DIR}: {linked} is {version / V18_DIR} reached "
                        "again through a symlink; ingested once")
    assert lines[2].startswith("v0.18: 4 files, 7 rows read, 4 accepted, 3 rejected "
                               "(name_conflict 3) in ")
    assert lines[2].endswith(
        "s; refused files: Dangling.csv (dangling symlink to gone.csv: not read); "
        "Folder.csv (a directory, not a regular file: not read); "
        "Loop.csv (symlink loop: not read); "
        "Pipe.csv (a FIFO, not a regular file: not read); "
        "RmsNorm.csv / rmsnorm.csv (names differ only by case; every row rejected)")
    assert len(lines) == 3
    with sqlite3.connect(db) as conn:
        files = conn.execute("SELECT file_name, rows_read, rows_accepted, rows_rejected, refusal "
                             "FROM kernel_file ORDER BY file_name").fetchall()
        profiles = conn.execute("SELECT alias, device FROM profile_set").fetchall()
        conflict_rows = conn.execute("SELECT file_name, line_no, reason_code FROM rejected_row "
                                     "ORDER BY file_name, line_no").fetchall()
    conflict = ("{} differs only by case from {}: which file holds the kernel is ambiguous, "
                "so none is used; rename or remove all but one")
    assert files == [
        ("Dangling.csv", 0, 0, 0, "dangling symlink to gone.csv: not read"),
        ("Folder.csv", 0, 0, 0, "a directory, not a regular file: not read"),
        ("Good.csv", 2, 2, 0, None),
        ("Linked.csv", 2, 2, 0, None),
        ("Loop.csv", 0, 0, 0, "symlink loop: not read"),
        ("Pipe.csv", 0, 0, 0, "a FIFO, not a regular file: not read"),
        ("RmsNorm.csv", 1, 0, 1, conflict.format("RmsNorm.csv", "rmsnorm.csv")),
        ("rmsnorm.csv", 2, 0, 2, conflict.format("rmsnorm.csv", "RmsNorm.csv")),
    ]
    assert profiles == [("v0.18", DEVICE)]
    assert conflict_rows == [("RmsNorm.csv", 2, "name_conflict"),
                             ("rmsnorm.csv", 2, "name_conflict"),
                             ("rmsnorm.csv", 3, "name_conflict")]
