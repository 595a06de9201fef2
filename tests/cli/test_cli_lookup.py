"""``profstore lookup`` and ``profstore explain`` on the fixture database, and lookup on the
real corpus (v0.18) checked against values read from its CSVs."""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest
import yaml
from profstore.cli.main import main

from tests.support.cli_fixture import V18_CORPUS as V18_FILES
from tests.support.cli_lookup import brief, lookup_lines, rms
from tests.support.perfdb import mapping_doc


def test_lookup_stream_keeps_order_and_ids_past_malformed_lines(capsys, fixture_db):
    lines = [
        json.dumps(rms(16, id="a")),
        "",
        '{"id": "broken", "op": ',
        json.dumps({**rms(16), "id": 7, "args": [{"shape": [-1, 7168], "dtype": "bfloat16"}]}),
        json.dumps(rms(28, id="c")),
        "   ",
        json.dumps({"id": "d", "op": "aten.nothing.default", "args": []}),
        json.dumps(rms(20, hidden=4096)),
    ]
    code, answers, err = lookup_lines(capsys, fixture_db, "\n".join(lines) + "\n")
    assert (code, err) == (0, "")
    assert [brief(a) for a in answers] == [
        ("a", 14.0, "MEASURED", None),
        (None, None, None, "invalid_descriptor"),
        (7, None, None, "invalid_descriptor"),
        ("c", 18.625, "INTERPOLATED", None),
        ("d", None, None, "unmapped"),
        (None, 7.0, "INTERPOLATED", None),
    ]
    assert list(answers[0]) == ["id", "latency_us", "source", "reason", "confidence", "details"]
    assert answers[2]["details"] == {"error": "args[0].shape: dimension -1 is negative"}
    assert answers[1]["details"]["error"].startswith("descriptor: invalid JSON: ")
    assert answers[3]["details"]["method"] == "linear_1d"
    assert [r["axes"] for r in answers[3]["details"]["matched_rows"]] == [[16.0], [64.0]]


def test_lookup_reads_a_file(capsys, fixture_db, tmp_path):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps(rms(64, id=1)) + "\n" + json.dumps(rms(128, id=2)) + "\n")
    assert main(["lookup", "--db", fixture_db, "--version", "v0.18", str(queries)]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [brief(a) for a in answers] == [(1, 32.5, "MEASURED", None),
                                           (2, None, None, "outside_range")]
    assert answers[0]["details"]["duplicates"]["count"] == 3


def test_lookup_without_interpolation(capsys, fixture_db):
    text = json.dumps(rms(28, id="x")) + "\n" + json.dumps(rms(16, id="y")) + "\n"
    code, answers, _ = lookup_lines(capsys, fixture_db, text,
                                    "--disable-profiling-interpolation")
    assert code == 0
    assert [brief(a) for a in answers] == [("x", None, None, "no_exact_match"),
                                           ("y", 14.0, "MEASURED", None)]


def test_mapping_overlay_adds_an_entry(capsys, fixture_db, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump(mapping_doc({"custom.norm.default":
                                                   {"kernel_type": "RmsNorm"}})))
    query = json.dumps({**rms(16, id=1), "op": "custom.norm.default"}) + "\n"
    _, plain, _ = lookup_lines(capsys, fixture_db, query)
    _, overlaid, _ = lookup_lines(capsys, fixture_db, query, "--mapping-overlay", str(overlay))
    assert brief(plain[0]) == (1, None, None, "unmapped")
    assert brief(overlaid[0]) == (1, 14.0, "MEASURED", None)


def test_broken_mapping_overlay_is_a_user_error(capsys, fixture_db, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("operator_mappings: [unclosed\n")
    code, answers, err = lookup_lines(capsys, fixture_db, json.dumps(rms(16)) + "\n",
                                      "--mapping-overlay", str(overlay))
    assert (code, answers) == (1, [])
    assert err.startswith("profstore: error: --mapping-overlay: ")
    assert err.count("\n") == 1


def test_lookup_unknown_version_and_missing_input(capsys, fixture_db, tmp_path):
    code, answers, err = lookup_lines(capsys, fixture_db, json.dumps(rms(16)), version="v1.0")
    assert (code, answers) == (1, [])
    assert err == "profstore: error: unknown version 'v1.0' (ingested: v0.18)\n"
    code = main(["lookup", "--db", fixture_db, "--version", "v0.18", str(tmp_path / "no")])
    assert code == 1
    message = f"profstore: error: cannot read {tmp_path / 'no'}: no such file\n"
    assert capsys.readouterr().err == message


def explain(capsys, db: str, descriptor: str, *options: str) -> tuple[int, str, str]:
    code = main(["explain", "--db", db, "--version", "v0.18", *options, descriptor])
    out, err = capsys.readouterr()
    return code, out, err


def section(text: str, title: str) -> list[str]:
    """The indented lines under ``title`` in explain output, de-indented."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    body = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        body.append(line[2:])
    return body


def test_explain_shows_vertices_weights_and_result(capsys, fixture_db):
    code, out, err = explain(capsys, fixture_db, json.dumps(rms(28)))
    assert (code, err) == (0, "")
    assert section(out, "mapping")[:2] == ["selector: generic", "kernel_type: RmsNorm"]
    assert section(out, "ownership") == [
        "exact owner: base (base exact lookup first, then the path)"]
    assert section(out, "base exact lookup") == [
        "RmsNorm: no_exact_match — no RmsNorm row with input signature "
        "x2|28,7168:DT_BF16;7168:DT_BF16"]
    assert "axes: axis_0=28" in section(out, "target")
    assert section(out, "interpolation path") == [
        "[axis_0] Average Duration(us): 3 candidates → interpolated "
        "(axis_0 28 interpolated between 16 and 64)"]
    rows = [line.split() for line in section(out, "rows used")[1:3]]
    assert [(r[0], r[1], r[2], r[-2], r[-1]) for r in rows] == [
        ("RmsNorm.csv", "3", "16", "0.75", "1"),
        ("RmsNorm.csv", "4", "64", "0.25", "3"),
    ]
    assert section(out, "result") == ["latency: 18.625 us", "source: INTERPOLATED",
                                      "confidence: 0.9", "reason: -",
                                      "method: linear_1d (1-D)"]


def test_explain_miss_lists_the_rejected_group(capsys, fixture_db):
    code, out, _ = explain(capsys, fixture_db, json.dumps(rms(128)))
    assert code == 0
    assert section(out, "path attempts") == [
        "RmsNorm: outside_range — target axis_0 128 above the largest measured axis_0 64",
        "  [axis_0] Average Duration(us): 3 candidates → outside_range "
        "(target axis_0 128 above the largest measured axis_0 64)",
    ]
    assert section(out, "result")[:4] == ["latency: -", "source: -", "confidence: 0",
                                          "reason: outside_range"]


def test_explain_reads_stdin_and_prints_json(capsys, fixture_db, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(rms(64, id="q"))))
    code, out, _ = explain(capsys, fixture_db, "-", "--json")
    result = json.loads(out)
    assert code == 0
    assert (result["latency_us"], result["source"]) == (32.5, "MEASURED")
    assert result["details"]["duplicates"] == {"count": 3, "min": 30.0, "max": 34.0,
                                               "aggregation": "median"}


@pytest.mark.parametrize(("descriptor", "message"), [
    ('{"op": ', "descriptor: invalid JSON: "),
    ('{"op": "x", "args": 5}', "args: must be a list, got 5"),
    ('{"args": []}', "op: missing"),
])
def test_explain_invalid_descriptor_exits_2(capsys, fixture_db, descriptor, message):
    code, out, err = explain(capsys, fixture_db, descriptor)
    assert (code, out) == (2, "")
    assert err.startswith(f"profstore: error: {message}")
    assert err.count("\n") == 1


def v18_rows(kernel: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, cells) of a real CSV, read without the ingest code."""
    text = (V18_FILES / f"{kernel}.csv").read_text(encoding="utf-8-sig")
    numbered = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    header = next(csv.reader([numbered[0][1]]))
    return [(no, dict(zip(header, next(csv.reader([line]))))) for no, line in numbered[1:]]


def rms_7168_rows() -> dict[int, list[tuple[int, float | None]]]:
    """Tokens → [(line, Average Duration or None when blank)] of the real RmsNorm rows of
    hidden 7168."""
    found: dict[int, list[tuple[int, float | None]]] = {}
    for no, cells in v18_rows("RmsNorm"):
        shapes = cells["Input Shapes"].strip('"').split(";")
        if shapes[1:] != ["7168"] or not shapes[0].endswith(",7168"):
            continue
        if cells["Input Data Types"] == "DT_BF16;DT_BF16":
            average = cells["Average Duration(us)"]
            tokens = int(shapes[0].split(",")[0])
            found.setdefault(tokens, []).append((no, float(average) if average else None))
    return found


def test_lookup_on_the_real_corpus(capsys, corpus_db):
    measured = rms_7168_rows()
    assert [len(measured[t]) for t in (4, 64, 72)] == [1, 1, 1]
    assert all(measured[t][0][1] for t in (4, 64, 72))
    assert not any(64 < t < 72 for t in measured)
    (line4, lat4), (line64, lat64), (line72, lat72) = (measured[t][0] for t in (4, 64, 72))
    queries = [rms(4, id="exact"), rms(68, id="between"), rms(100000, id="above"),
               {"id": "view", "op": "aten.view.default",
                "args": [{"shape": [4, 7168], "dtype": "bfloat16"}, [28672]]},
               {"id": "nope", "op": "aten.not_an_op.default", "args": []}]
    text = "\n".join(json.dumps(q) for q in queries) + "\n"
    code, answers, err = lookup_lines(capsys, corpus_db, text)
    assert (code, err) == (0, "")
    assert [brief(a) for a in answers] == [
        ("exact", lat4, "MEASURED", None),
        ("between", pytest.approx(lat64 + (lat72 - lat64) * 4 / 8), "INTERPOLATED", None),
        ("above", None, None, "outside_range"),
        ("view", 0.0, "MEASURED", None),
        ("nope", None, None, "unmapped"),
    ]
    assert [(r["file"], r["line"]) for r in answers[0]["details"]["matched_rows"]] == [
        ("RmsNorm.csv", line4)]
    assert [(r["line"], r["latency_us"], r["weight"])
            for r in answers[1]["details"]["matched_rows"]] == [
        (line64, lat64, pytest.approx(0.5)), (line72, lat72, pytest.approx(0.5))]


def test_kernels_on_the_real_corpus_count_every_data_line(capsys, corpus_db):
    assert main(["kernels", "--db", corpus_db, "--version", "v0.18", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    files = sorted(V18_FILES.glob("*.csv"))
    assert sorted(r["file"] for r in rows) == [f.name for f in files]
    for row in rows:
        assert row["rows_read"] == len(v18_rows(row["kernel_type"])), row["file"]
        assert row["rows_read"] == row["rows_accepted"] + row["rows_rejected"]


def test_format_policy_states_formats_and_is_recorded(capsys, fixture_db):
    # RmsNorm's rows are ND only: the policy's ND is the answer's format source
    code, answers, err = lookup_lines(capsys, fixture_db, json.dumps(rms(16)) + "\n",
                                      "--format-policy", '{"default": "ND"}')
    assert (code, err, brief(answers[0])) == (0, "", (None, 14.0, "MEASURED", None))


@pytest.mark.parametrize(("policy", "message"), [
    ('{"default": "ZZ"}', "profstore: error: --format-policy: format_policy.default: unknown "
                          "format 'ZZ'"),
    ('{"ops": {"aten.nope.default": {"0": "ND"}}}',
     "profstore: error: --format-policy: format_policy.ops: unknown op 'aten.nope.default' "
     "(not in the v0.18 mapping)"),
    ("{", "profstore: error: --format-policy: invalid JSON"),
])
def test_a_bad_format_policy_exits_with_one_line(capsys, fixture_db, policy, message):
    code, answers, err = lookup_lines(capsys, fixture_db, json.dumps(rms(16)) + "\n",
                                      "--format-policy", policy)
    assert code != 0 and answers == []
    assert err.startswith(message) and err.count("\n") == 1
