"""One version at a glance: per path, its kernels with point counts, path refusals and
duplicate coordinates, and the rows ingest rejected by reason; drawn as small multiples
(one panel per path, shared log axis) so no panel hides another."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from profstore.api import Store
from profstore.evaluation.plot import PlotError, figure_legend, png_bytes, pyplot, small_multiples
from profstore.storage.accounting import (
    duplicate_coordinate_counts,
    kernel_path_counts,
    refusal_counts,
    rejected_by_reason,
)

TOP_KERNELS = 10
"""Kernels drawn per panel (the most points first); the panel title counts the rest."""


@dataclass
class KernelCounts:
    kernel: str
    points: int = 0
    regimes: int = 0
    refused: int = 0
    duplicate_coordinates: int = 0


@dataclass
class PathCounts:
    path: str
    kernels: list[KernelCounts] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(getattr(k, name) for k in self.kernels)


@dataclass
class VersionOverview:
    version: str
    paths: list[PathCounts]
    rejected: dict[str, int]


def version_overview(store: Store, version: str) -> VersionOverview:
    """The counts behind the figure, read from the version's tables."""
    profile = store.profile(version)
    if profile is None:
        raise PlotError(f"unknown version {version!r} (ingested: {', '.join(store.versions())})")
    with store.engine.connect() as conn:
        points = kernel_path_counts(conn, profile.id)
        refusals = refusal_counts(conn, profile.id)
        duplicated = duplicate_coordinate_counts(conn, profile.id)
        rejected = rejected_by_reason(conn, profile.id)
    cells: dict[tuple[str, str], KernelCounts] = {}
    for count in points:
        cells[(count.path, count.kernel)] = KernelCounts(count.kernel, points=count.points,
                                                        regimes=count.regimes)
    for refusal in refusals:
        cell = cells.setdefault((refusal.path, refusal.kernel), KernelCounts(refusal.kernel))
        cell.refused += refusal.count
    for (kernel, path), n in duplicated.items():
        cells.setdefault((path, kernel), KernelCounts(kernel)).duplicate_coordinates = n
    by_path: dict[str, PathCounts] = {}
    for (path, _), counts in sorted(cells.items()):
        by_path.setdefault(path, PathCounts(path)).kernels.append(counts)
    for path_counts in by_path.values():
        path_counts.kernels.sort(key=lambda k: (-k.points, -k.refused, k.kernel))
    ordered = sorted(by_path.values(), key=lambda p: (-p.total("points"), p.path))
    return VersionOverview(version, ordered, rejected)


BARS = (("points", "sample points", "tab:blue"), ("refused", "path refusals", "tab:red"),
        ("duplicate_coordinates", "duplicate coordinates", "tab:orange"))


def overview_png(overview: VersionOverview) -> bytes:
    """One panel per path (its kernels, the most points first) and one for rejected rows."""
    plt = pyplot()
    panels = len(overview.paths) + 1
    fig, axes = small_multiples(plt, panels, panel=(3.8, 2.0), columns=3, sharey=False)
    fig.subplots_adjust(wspace=0.75, hspace=0.45)
    for ax, path in zip(axes, overview.paths):
        _path_panel(ax, path)
    _rejected_panel(axes[-1], overview.rejected)
    largest = max([getattr(k, name) for p in overview.paths for k in p.kernels
                   for name, _, _ in BARS] + list(overview.rejected.values()) + [1])
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlim(0.8, largest * 1.6)
        ax.set_ylim(TOP_KERNELS - 0.5, -0.5)
    figure_legend(fig, axes[0])
    fig.supxlabel("count (log scale)", fontsize=8)
    fig.suptitle(f"{overview.version}: kernels per path (bars: the {TOP_KERNELS} kernels "
                 "with the most points)", fontsize=9, y=1.0 + 0.3 / fig.get_figheight())
    return png_bytes(fig)


def _path_panel(ax: Any, path: PathCounts) -> None:
    shown = path.kernels[:TOP_KERNELS]
    height = 0.8 / len(BARS)
    for offset, (name, label, colour) in enumerate(BARS):
        ys = [row + (offset - 1) * height for row in range(len(shown))]
        values = [getattr(k, name) or 0 for k in shown]
        ax.barh(ys, values, height=height, color=colour, label=label)
    ax.set_yticks(range(len(shown)), [k.kernel for k in shown], fontsize=6)
    ax.tick_params(axis="y", labelleft=True)
    more = len(path.kernels) - len(shown)
    title = (f"{path.path}: {len(path.kernels)} kernels, {path.total('points')} points, "
             f"{path.total('regimes')} regimes")
    ax.set_title(title + (f"\n({more} more kernels not drawn)" if more > 0 else ""),
                 fontsize=7)
    ax.tick_params(axis="x", labelsize=7)


def _rejected_panel(ax: Any, rejected: Counter | dict[str, int]) -> None:
    reasons = sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))
    if reasons:
        ax.barh(range(len(reasons)), [n for _, n in reasons], color="0.4")
        ax.set_yticks(range(len(reasons)), [r for r, _ in reasons], fontsize=6)
    else:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "no row rejected", transform=ax.transAxes, ha="center", fontsize=8)
    ax.tick_params(axis="y", labelleft=True)
    ax.set_title(f"rejected rows by reason ({sum(rejected.values())})", fontsize=7)
