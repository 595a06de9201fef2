"""The minimal report: every RFC §7.3 section, with content derived from the database."""

from __future__ import annotations

import base64
import re

import pytest
from profstore.evaluation.document import render_html, render_markdown
from profstore.evaluation.holdout import run_holdout
from profstore.evaluation.replay import replay_workload
from profstore.evaluation.report import ReportInputs, build_sections, unverified_scope
from profstore.storage.urls import normalize_url, redact_url

from tests.support.evaluation import TRACE

TITLES = ["Software and data", "Enabled configuration", "Source distribution (workload replay)",
          "Interpolation axes and dimensions", "Hold-out error statistics",
          "Failure-reason distribution", "Unverified scope"]


@pytest.fixture()
def inputs(square_store, square_db):
    return ReportInputs(square_store, "v0.18", [replay_workload(square_store, TRACE, "v0.18")],
                        run_holdout(square_store, "v0.18"), database=normalize_url(square_db))


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end >= 0 else len(text)]


def row(text: str, first: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {first} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_markdown_has_every_section_in_order(inputs):
    text = render_markdown("report", build_sections(inputs))
    assert re.findall(r"^## (.+)$", text, re.M) == TITLES


def test_software_data_and_database(inputs, square_db):
    text = section(render_markdown("report", build_sections(inputs)), "Software and data")
    assert row(text, "version") == ["version", "v0.18"]
    assert row(text, "device") == ["device", "TEST_DEVICE"]
    assert row(text, "database") == ["database", redact_url(normalize_url(square_db))]
    assert row(text, "rows_accepted") == ["rows_accepted", "6"]
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", row(text, "git_commit")[1])
    assert row(text, "profstore_version")[1].startswith("0.1.0")


def test_configuration_lists_policies_and_ceilings(inputs):
    text = section(render_markdown("report", build_sections(inputs)), "Enabled configuration")
    assert "Interpolation: on; mapping overlay: none." in text
    assert row(text, "RmsNorm")[:3] == ["RmsNorm", "1", "generic:1"]


def test_source_distribution_and_unmapped(inputs):
    text = section(render_markdown("report", build_sections(inputs)),
                   "Source distribution (workload replay)")
    # tokens 20 → 4.0 (2 calls), 25 → (4 + 9) / 2 = 6.5 (2 calls): 21.0 us
    assert row(text, "fixture decode") == [
        "fixture decode", "21.0", "9", "2 (1) 22.2%", "2 (1) 22.2%", "0 (0) 0.0%",
        "5 (2) 55.6%", "0", "3 in 1 variants"]
    assert "Unmapped ops: fixture decode: aten.nothing.default (4 calls)" in text


def test_axes_holdout_and_failures(inputs):
    text = render_markdown("report", build_sections(inputs))
    axes = section(text, "Interpolation axes and dimensions")
    assert row(axes, "generic") == ["generic", "axis_0", "axis_0", "1", "6", "linear_1d 3"]
    held = section(text, "Hold-out error statistics")
    assert row(held, "generic")[2:] == ["1", "5", "2 (0)", "3", "3 (100.0%)",
                                        "11.11 / 22.22 / 25.00", "55.56 / 71.11 / 75.00", "-"]
    failures = section(text, "Failure-reason distribution")
    assert row(failures, "fixture decode") == ["fixture decode", "unmapped", "4", "1",
                                               "aten.nothing.default"]


def test_unverified_scope_is_derived_from_mapping_and_data(inputs, square_store):
    scope = unverified_scope(square_store, "v0.18")
    assert scope["gaps"] == [{"selector": "compute_scale", "kernel": "DynamicBlockQuant",
                              "path": "compute_scale", "status": "no CSV",
                              "ops": "tensor_cast.dynamic_quantize_mxfp4.default",
                              "refusals": {}}]
    assert "generic" not in scope["paths_without_points"]
    assert "compute_scale" in scope["paths_without_points"]
    text = section(render_markdown("report", build_sections(inputs)), "Unverified scope")
    assert row(text, "compute_scale")[:4] == ["compute_scale", "DynamicBlockQuant",
                                              "compute_scale", "no CSV"]


def test_html_embeds_png_plots(inputs):
    inputs.images = True
    text = render_html("report", build_sections(inputs))
    assert [f"<h2>{t}</h2>" in text for t in TITLES] == [True] * len(TITLES)
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", text)
    assert len(images) == 2
    assert all(base64.b64decode(i).startswith(b"\x89PNG\r\n\x1a\n") for i in images)
    assert "<td>11.11 / 22.22 / 25.00</td>" in text
