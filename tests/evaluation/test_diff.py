"""``diff``: two versions with a known latency ratio, regimes and kernels in one only, a
changed mapping entry, and a workload's total in both.

v0.15: RmsNorm hidden 7168, tokens 10…50 → 2x + 3 us (x = tokens / 10).
v0.18: the same regime at tokens 10…40 with every latency × 1.5, a new regime (hidden
4096), a kernel v0.15 lacks (Cast) and RmsNormAiCore as the entry's alternate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from profstore.api import Store
from profstore.cli.main import main
from profstore.evaluation.diff import diff_versions
from profstore.evaluation.workload import load_workload

from tests.support.evaluation import LINEAR, RMS_OP, rms_row
from tests.support.perfdb import Row, build_database, mapping_doc, write_version

V15_DIR = "vllm0.15.0_torch2.9.0_cann8.5"
TRACE = {"model": "fixture", "scenario": "decode", "ops": [
    {"op_name": RMS_OP, "count": 2, "shape_variants": [
        {"input_shapes": ["(20, 7168)", "(7168)"], "input_dtypes": ["float16"] * 2,
         "output_shapes": ["(20, 7168)"], "output_dtypes": ["float16"]}]}]}


@pytest.fixture()
def two_versions(tmp_path: Path) -> str:
    root = tmp_path / "data"
    write_version(root, {"RmsNorm": [rms_row(x, y) for x, y in LINEAR]},
                  mapping_doc({RMS_OP: {"kernel_type": "RmsNorm"}}), directory=V15_DIR)
    newer = [rms_row(x, y * 1.5) for x, y in LINEAR[:4]]
    newer += [Row([[20, 4096], [4096]], ["DT_BF16"] * 2, [[20, 4096]], ["DT_BF16"], 4.0)]
    cast = [Row([[8, 16]], ["DT_BF16"], [[8, 16]], ["FLOAT"], 2.0)]
    write_version(root, {"RmsNorm": newer, "Cast": cast}, mapping_doc({RMS_OP: {
        "kernel_type": "RmsNorm", "alternate_kernel_types": ["RmsNormAiCore"]}}))
    return build_database(tmp_path)


def test_ratio_presence_and_mapping(two_versions):
    with Store.open(two_versions) as store:
        report = diff_versions(store, "v0.15", store, "v0.18", [load_workload(TRACE)])
    rms = next(k for k in report.kernels if k.kernel == "RmsNorm")
    assert (rms.presence, rms.regimes_both, rms.regimes_only_from, rms.regimes_only_to) == (
        "both", 1, 0, 1)
    assert rms.ratios.coordinates == 4
    assert (rms.ratios.median, rms.ratios.p10, rms.ratios.p90) == (
        pytest.approx(1.5), pytest.approx(1.5), pytest.approx(1.5))
    assert [(k.kernel, k.presence) for k in report.kernels if k.kernel != "RmsNorm"] == [
        ("Cast", "to")]
    only = [r for r in report.regimes if r.kernel == "RmsNorm" and r.presence == "to"]
    assert len(only) == 1 and '"shape_signature":"T,4096;4096"' in only[0].regime_key
    assert [(c.op, c.change, c.before, c.after) for c in report.mapping_changes] == [
        (RMS_OP, "alternate_kernel_types", [], ["RmsNormAiCore"])]
    (w,) = report.workloads
    assert (w.total_from_us, w.total_to_us) == (pytest.approx(14.0), pytest.approx(21.0))
    assert w.ops == [{"op": RMS_OP, "from_us": pytest.approx(14.0),
                      "to_us": pytest.approx(21.0), "delta_us": pytest.approx(7.0)}]


def test_cli_json_plot_and_two_databases(two_versions, tmp_path, capsys):
    figure = tmp_path / "ratios.png"
    assert main(["diff", "--db", two_versions, "--db-b", two_versions, "--from", "v0.15",
                 "--to", "v0.18", "--json", "--plot", str(figure)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["overall"]["coordinates"] == 4
    assert data["headline"].startswith("v0.15 -> v0.18: 1 kernels in both, 0 only in v0.15, "
                                       "1 only in v0.18; 4 shared coordinates, latency ratio "
                                       "median 1.500")
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["diff", "--db", two_versions, "--from", "v0.15", "--to", "v0.18"]) == 0
    text = capsys.readouterr().out
    assert "RmsNorm" in text and "alternate_kernel_types" in text


def test_unknown_version(two_versions, capsys):
    assert main(["diff", "--db", two_versions, "--from", "v0.15", "--to", "v2.0"]) == 1
    assert "unknown version 'v2.0'" in capsys.readouterr().err
    with Store.open(two_versions) as store, pytest.raises(ValueError, match="v2.0"):
        diff_versions(store, "v2.0", store, "v0.18")
