"""Every bad input ends in the rejected table (or path_refusal) with a code and a clear
reason, the rest of the version still ingests, and per file rows read = accepted + rejected."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from profstore.ingest.loader import VersionSummary, ingest_path
from profstore.storage import schema as t
from profstore.storage.engines import make_engine, upgrade
from sqlalchemy import Engine, select

from tests.support.perfdb import (
    BASE_HEADER,
    V18_DIR,
    Row,
    csv_text,
    mapping_doc,
    new_database,
    write_hccl,
    write_version,
)

HEADER = [*BASE_HEADER, "Average Duration(us)"]
WIDTH = len(HEADER)
LFS_TEXT = ("version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
            "size 18734\n")
LFS_REASON = "this is a Git LFS pointer, not CSV content; run git lfs pull"
MAPPING = mapping_doc({"tensor_cast.rms_norm.default": {"kernel_type": "Good"}})


def row(tokens: int | str = 4, latency: object = 2.0, dtypes: list[str] | None = None) -> Row:
    return Row([[tokens, 8], [8]], dtypes or ["DT_BF16", "DT_BF16"], [[4, 8]], ["DT_BF16"],
               latency)


def lines_of(rows: list[Row]) -> list[str]:
    return csv_text(rows, HEADER).split("\r\n")[1:-1]


GOOD = lines_of([row()])[0]
BAD_ROWS = {
    "too many columns": GOOD + ",extra",
    "too few columns": GOOD.rsplit(",", 2)[0],
    "letters in a shape": lines_of([row("x")])[0],
    "superscript digit": lines_of([row("\u00b2")])[0],
    "NaN latency": lines_of([row(latency="nan")])[0],
    "zero latency": lines_of([row(latency=0)])[0],
    "negative latency": lines_of([row(latency=-1.5)])[0],
    "non-numeric latency": lines_of([row(latency="fast")])[0],
    "blank latency": lines_of([row(latency="")])[0],
    "unknown dtype": lines_of([row(dtypes=["DT_BF16", "DT_WHAT"])])[0],
    "slot count mismatch": lines_of([row(dtypes=["DT_BF16"])])[0],
    "unclosed quote": 'dynamic,AI_CORE,"""4,8;8',
}
EXPECTED = {
    "too many columns": ("column_count", f"expected {WIDTH} columns, got {WIDTH + 1}"),
    "too few columns": ("column_count", f"expected {WIDTH} columns, got {WIDTH - 2}"),
    "letters in a shape": ("shape_unparsable", "unparsable shape 'x,8' in '\"x,8;8\"'"),
    "superscript digit": ("shape_unparsable",
                          "unparsable shape '\u00b2,8' in '\"\u00b2,8;8\"'"),
    "NaN latency": ("latency_invalid", "no finite positive latency: Average Duration(us)='nan'"),
    "zero latency": ("latency_invalid", "no finite positive latency: Average Duration(us)='0'"),
    "negative latency": ("latency_invalid",
                         "no finite positive latency: Average Duration(us)='-1.5'"),
    "non-numeric latency": ("latency_invalid",
                            "no finite positive latency: Average Duration(us)='fast'"),
    "blank latency": ("latency_invalid", "no finite positive latency: Average Duration(us)=''"),
    "unknown dtype": ("unknown_dtype", "unknown input dtype 'DT_WHAT'"),
    "slot count mismatch": ("slot_count_mismatch",
                            "input slots disagree: 2 shapes, 1 dtypes, 1 formats"),
    "unclosed quote": ("csv_syntax", "CSV syntax error: unexpected end of data"),
}


def bad_file() -> str:
    body = [GOOD, *BAD_ROWS.values(), GOOD]
    return "\r\n".join([",".join(HEADER), *body]) + "\r\n"


def independent_count(path: Path) -> int:
    """Non-blank lines minus the header, read without the ingest code."""
    return sum(1 for line in path.read_bytes().splitlines() if line.strip()) - 1


class Fixture:
    def __init__(self, root: Path, engine: Engine, summaries: list[VersionSummary]) -> None:
        self.root, self.engine, self.summaries = root, engine, summaries

    def rejected(self, file_name: str) -> list[tuple[int, str, str]]:
        r = t.rejected_row.c
        with self.engine.connect() as conn:
            return [tuple(x) for x in conn.execute(
                select(r.line_no, r.reason_code, r.reason).where(r.file_name == file_name)
                .order_by(r.line_no))]

    def files(self) -> dict[str, tuple[int, int, int, str | None]]:
        with self.engine.connect() as conn:
            return {x.file_name: (x.rows_read, x.rows_accepted, x.rows_rejected, x.refusal)
                    for x in conn.execute(select(t.kernel_file))}

    def accepted_lines(self, kernel: str) -> list[int]:
        s = t.sample.c
        with self.engine.connect() as conn:
            return list(conn.execute(select(s.line_no).where(s.kernel_type == kernel)
                                     .order_by(s.line_no)).scalars())


@contextmanager
def ingest(tmp_path: Path, root: Path, **options: bool) -> Iterator[Fixture]:
    engine = make_engine(new_database(tmp_path))
    upgrade(engine)
    yield Fixture(root, engine, ingest_path(engine, root, **options))
    engine.dispose()


@pytest.fixture()
def version(tmp_path: Path) -> Iterator[Fixture]:
    root = tmp_path / "data"
    folder = write_version(root, {"Good": [row(), row(8, 3.0)], "Bad": bad_file()}, MAPPING)
    (folder / "Lfs.csv").write_text(LFS_TEXT)
    (folder / "Truncated.csv").write_text(
        "\r\n".join([",".join(HEADER), GOOD, 'dynamic,AI_CORE,"""16,8;8']))
    (folder / "Cut.csv").write_text("\r\n".join([",".join(HEADER), GOOD, "dynamic,AI_CORE,"]))
    latin1 = "\n".join([",".join(HEADER), GOOD, GOOD]) + "\n"
    (folder / "Latin1.csv").write_bytes(latin1.encode().replace(b"dynamic", b"dyn\xe9mic"))
    (folder / "Missing.csv").write_text(",".join(HEADER[:-2]) + "\n" + "a,b\n")
    (folder / "Twice.csv").write_text(",".join([*HEADER, "Average Duration(us)"]) + "\n"
                                      + GOOD + ",1.0\n")
    with ingest(tmp_path, root) as fixture:
        yield fixture


def test_every_bad_row_is_rejected_with_its_code_and_reason(version):
    rows = version.rejected("Bad.csv")
    expected = [(line, *EXPECTED[name]) for line, name in enumerate(BAD_ROWS, start=3)]
    assert rows == expected
    assert version.accepted_lines("Bad") == [2, 3 + len(BAD_ROWS)]


def test_a_cut_off_last_line_is_reported_as_truncated(version):
    assert version.rejected("Truncated.csv") == [(
        3, "truncated_row",
        "file ends mid-row (last line has no line break): CSV syntax error: unexpected end of data",
    )]
    assert version.rejected("Cut.csv") == [(
        3, "truncated_row",
        f"file ends mid-row (last line has no line break): expected {WIDTH} columns, got 3")]
    assert version.accepted_lines("Truncated") == version.accepted_lines("Cut") == [2]


def test_file_level_refusals_reject_every_line_and_are_reported(version):
    files = version.files()
    assert files["Lfs.csv"] == (3, 0, 3, LFS_REASON)
    assert version.rejected("Lfs.csv") == [(n, "lfs_pointer", LFS_REASON) for n in (1, 2, 3)]
    latin1 = files["Latin1.csv"]
    assert latin1[:3] == (2, 0, 2)
    assert latin1[3].startswith("not UTF-8 text: 'utf-8' codec can't decode byte 0xe9")
    assert [r[:2] for r in version.rejected("Latin1.csv")] == [(2, "unreadable_file"),
                                                               (3, "unreadable_file")]
    missing = "file lacks required columns ['Output Formats']"
    assert files["Missing.csv"] == (1, 0, 1, missing)
    assert version.rejected("Missing.csv") == [(2, "missing_columns", missing)]
    twice = "header repeats columns ['Average Duration(us)']: cells would be ambiguous"
    assert files["Twice.csv"] == (1, 0, 1, twice)
    assert version.rejected("Twice.csv") == [(2, "duplicate_columns", twice)]


def test_the_rest_of_the_version_still_ingests(version):
    [summary] = version.summaries
    assert summary.status == "ingested"
    assert summary.files == 8
    assert version.accepted_lines("Good") == [2, 3]
    assert version.files()["Good.csv"] == (2, 2, 0, None)
    with version.engine.connect() as conn:
        ops = conn.execute(select(t.op_mapping.c.op, t.op_mapping.c.kernel_type)).all()
    assert [tuple(o) for o in ops] == [("tensor_cast.rms_norm.default", "Good")]


def test_rows_read_is_accepted_plus_rejected_and_matches_an_independent_count(version):
    folder = version.root / "TEST_DEVICE" / "vllm_ascend" / V18_DIR
    files = version.files()
    for path in folder.glob("*.csv"):
        read, accepted, rejected, _ = files[path.name]
        assert read == accepted + rejected, path.name
        if path.name != "Lfs.csv":  # a pointer has no header: all of its lines are rows
            assert read == independent_count(path), path.name
    [summary] = version.summaries
    assert summary.rows_read == sum(f[0] for f in files.values())
    assert summary.rows_rejected == sum(f[2] for f in files.values())
    with version.engine.connect() as conn:
        stored = len(conn.execute(select(t.sample.c.id)).all())
        rejected = len(conn.execute(select(t.rejected_row.c.id)).all())
    assert (stored, rejected) == (summary.rows_accepted, summary.rows_rejected)


@pytest.mark.parametrize(("yaml_text", "reason"), [
    ("operator_mappings: [unclosed\n",
     "op_mapping.yaml refused: <text>: broken YAML at line 2, column 1"),
    ("device: X\n",
     "op_mapping.yaml refused: <text>: no 'operator_mappings' mapping"),
])
def test_an_unusable_mapping_is_a_rejected_row_and_the_csvs_still_ingest(
        tmp_path, yaml_text, reason):
    root = tmp_path / "data"
    write_version(root, {"Good": [row(), row(8, 3.0)]}, yaml_text)
    with ingest(tmp_path, root, allow_missing_mapping=True) as fixture:
        [(line, code, text)] = fixture.rejected("op_mapping.yaml")
        assert (line, code) == (0, "mapping_problem")
        assert text.startswith(reason)
        assert fixture.accepted_lines("Good") == [2, 3]
        assert fixture.files() == {"Good.csv": (2, 2, 0, None)}


def test_an_unknown_top_level_key_is_a_rejected_row_and_the_rest_applies(tmp_path):
    root = tmp_path / "data"
    write_version(root, {"Good": [row()]}, {**MAPPING, "bogus_block": {"a": 1}})
    with ingest(tmp_path, root) as fixture:
        assert fixture.rejected("op_mapping.yaml") == [
            (0, "mapping_problem", "<text>: unknown top-level key 'bogus_block' ignored")]
        with fixture.engine.connect() as conn:
            assert conn.execute(select(t.op_mapping.c.kernel_type)).scalars().all() == ["Good"]


def test_a_mapping_that_is_not_utf8_is_rejected_and_the_csvs_still_ingest(tmp_path):
    root = tmp_path / "data"
    folder = write_version(root, {"Good": [row()]})
    (folder / "op_mapping.yaml").write_bytes(b"device: \xff\n")
    with ingest(tmp_path, root, allow_missing_mapping=True) as fixture:
        [(line, code, text)] = fixture.rejected("op_mapping.yaml")
        assert (line, code) == (0, "unreadable_file")
        assert text.startswith("op_mapping.yaml is not UTF-8: 'utf-8' codec can't decode byte 0xff")
        assert fixture.accepted_lines("Good") == [2]


def test_bad_hccl_rows_are_rejected_with_reasons(tmp_path):
    root = tmp_path / "data"
    folder = write_hccl(root, "hcom_allReduce_", [
        (1024, 8, "DT_BF16", "intra_node", 12.5, 0.08),
        (0, 8, "DT_BF16", "intra_node", 12.5, 0.08),
        (1024, 2.5, "DT_BF16", "intra_node", 12.5, 0.08),
        (1024, 8, "DT_BF16", "intra_node", "nan", 0.08),
        (1024, 8, "DT_BF16", "intra_node", 12.5),
    ])
    with ingest(tmp_path, root) as fixture:
        assert fixture.rejected("hcom_allReduce_.csv") == [
            (3, "field_invalid", "message_bytes '0' invalid"),
            (4, "field_invalid", "num_devices '2.5' invalid"),
            (5, "latency_invalid", "no finite positive latency: Duration(us)='nan'"),
            (6, "column_count", "expected 6 columns, got 5"),
        ]
        assert fixture.files()["hcom_allReduce_.csv"] == (5, 1, 4, None)
        assert independent_count(folder / "hcom_allReduce_.csv") == 5


def test_an_hccl_lfs_pointer_is_refused_and_the_other_collectives_load(tmp_path):
    root = tmp_path / "data"
    folder = write_hccl(root, "hcom_allGather_", [(2048, 16, "DT_BF16", "inter_node", 40.0, 0.05)])
    (folder / "hcom_broadcast_.csv").write_text(LFS_TEXT)
    with ingest(tmp_path, root) as fixture:
        assert fixture.rejected("hcom_broadcast_.csv") == [
            (n, "lfs_pointer", LFS_REASON) for n in (1, 2, 3)]
        assert fixture.files() == {"hcom_allGather_.csv": (1, 1, 0, None),
                                   "hcom_broadcast_.csv": (3, 0, 3, LFS_REASON)}
        [summary] = fixture.summaries
        assert (summary.alias, summary.status, dict(summary.reasons)) == (
            "hccl-v8.5", "ingested", {"lfs_pointer": 3})
