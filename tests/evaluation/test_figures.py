"""The report's figures are small multiples: one panel per path (each with its own point
count), a legend for the whole figure rather than over a panel's data; the version
overview draws one panel per path plus the rejected rows."""

from __future__ import annotations

import importlib.util

import pytest
from profstore.evaluation import overview as overview_module
from profstore.evaluation import plot
from profstore.evaluation.holdout import GroupStats, HoldoutPoint, HoldoutReport

from tests.support.prerequisites import require

pytestmark = pytest.mark.no_database


@pytest.fixture(autouse=True)
def _matplotlib() -> None:
    require(importlib.util.find_spec("matplotlib") is not None, "matplotlib (profstore[report])")


def point(path: str, ape: float | None, nn_ape: float | None = None,
          boundary: bool = False) -> HoldoutPoint:
    return HoldoutPoint(kernel="K", path=path, regime_key="{}", axes=[1.0], semantic=None,
                        rows=1, boundary=boundary, ape=ape, nn_ape=nn_ape)


class Drawn:
    """Captures the figure a function hands to png_bytes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module) -> None:
        self.figure = None
        monkeypatch.setattr(module, "png_bytes", self._keep)

    def _keep(self, fig) -> bytes:
        self.figure = fig
        return b"png"

    def panels(self) -> list:
        return [ax for ax in self.figure.axes if ax.get_visible()]


def test_holdout_cdf_has_one_panel_per_answered_path(monkeypatch):
    stats = [GroupStats(name, "*", ["tokens"]) for name in ("generic", "matmul", "fia")]
    points = [point("generic", 1.0, 2.0), point("generic", 3.0, 1.5),
              point("generic", None, boundary=True), point("matmul", 0.5, 4.0),
              point("fia", None)]
    report = HoldoutReport("v0.18", {}, [], stats, points, [])
    drawn = Drawn(monkeypatch, plot)
    plot.holdout_png(report)
    panels = drawn.panels()
    assert [ax.get_title() for ax in panels] == ["generic\n2 points", "matmul\n1 points"]
    assert all(ax.get_legend() is None for ax in panels)
    assert [t.get_text() for t in drawn.figure.legends[0].get_texts()] == [
        "interpolation", "nearest neighbour"]
    steps = [len(line.get_xdata()) for line in panels[0].get_lines()]
    assert steps == [2, 2]


def test_overview_has_a_panel_per_path_and_one_for_rejected_rows(monkeypatch):
    counts = overview_module.KernelCounts
    data = overview_module.VersionOverview("v0.18", [
        overview_module.PathCounts("generic", [counts("RmsNorm", 7, 2, 0, 1),
                                               counts("Add", 2, 1, 0, 0)]),
        overview_module.PathCounts("matmul", [counts("MatMulV2", 40, 3, 5, 2)]),
    ], {"latency_invalid": 1, "shape_invalid": 2})
    drawn = Drawn(monkeypatch, overview_module)
    overview_module.overview_png(data)
    panels = drawn.panels()
    assert [ax.get_title() for ax in panels] == [
        "generic: 2 kernels, 9 points, 3 regimes", "matmul: 1 kernels, 40 points, 3 regimes",
        "rejected rows by reason (3)"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["RmsNorm", "Add"]
    assert [t.get_text() for t in panels[2].get_yticklabels()] == [
        "shape_invalid", "latency_invalid"]
    widths = sorted(round(p.get_width()) for p in panels[1].patches)
    assert widths == [2, 5, 40]
