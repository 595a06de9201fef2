"""Figures for the evaluation: one regime's points and interpolant, and report charts.

matplotlib is the optional extra ``report``; it is imported on first use, headless.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from profstore.api import Store
from profstore.evaluation.holdout import (
    HoldoutPoint,
    HoldoutReport,
    entry_for,
    known_profile,
    run_holdout,
    transformed,
)
from profstore.paths.base import Extraction
from profstore.paths.registry import path_named
from profstore.storage.points import RegimeCount, kernel_regimes, regime_points

CURVE_SAMPLES = 240


class PlotError(ValueError):
    """The requested plot cannot be drawn (unknown regime, matplotlib missing, …)."""


def pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotError("matplotlib is not installed; install the extra: "
                        "pip install 'profstore[report]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return buffer.getvalue()


@dataclass(frozen=True)
class RegimeChoice:
    kernel: str
    path: str
    regime_key: str
    rank: int


def list_regimes(store: Store, profile_id: int, kernel: str,
                 path: str | None) -> list[RegimeCount]:
    """The kernel's regimes with their point counts, in ``profstore regimes`` order
    (kernel, path, regime key) with the same filters."""
    with store.engine.connect() as conn:
        return kernel_regimes(conn, profile_id, kernel, path)


def choose_regime(store: Store, version: str, kernel: str, path: str | None,
                  regime: str | None) -> RegimeChoice:
    """``regime``: a 1-based rank in the filtered ``profstore regimes`` listing or a
    regime_key text; None picks the regime with the most points (first on ties)."""
    profile = store.profile(version)
    if profile is None:
        raise PlotError(f"unknown version {version!r}")
    found = list_regimes(store, profile.id, kernel, path)
    if not found:
        raise PlotError(f"no points for kernel {kernel!r}"
                        + (f" on path {path!r}" if path else "") + f" in {version}")
    if regime is None:
        best = max(range(len(found)), key=lambda i: (found[i].points, -i))
    elif regime.isdigit() and 1 <= int(regime) <= len(found):
        best = int(regime) - 1
    else:
        matches = [i for i, r in enumerate(found) if r.regime_key == regime]
        if not matches:
            raise PlotError(f"no regime {regime!r} for {kernel} (use a rank 1..{len(found)} "
                            "from `profstore regimes` or a regime_key)")
        best = matches[0]
    chosen = found[best]
    return RegimeChoice(chosen.kernel, chosen.path, chosen.regime_key, best + 1)


def _rows(store: Store, profile_id: int, choice: RegimeChoice) -> tuple[np.ndarray, np.ndarray]:
    with store.engine.connect() as conn:
        rows = regime_points(conn, profile_id, choice.kernel, choice.path, choice.regime_key)
    return (np.array([list(r.axes) for r in rows], dtype=float),
            np.array([r.latency_us for r in rows], dtype=float))


@dataclass
class RegimeFigure:
    """One regime drawn: the PNG, the summary ``profstore plot`` prints, and the hold-out
    points behind the figure (the web view tabulates them next to it)."""

    png: bytes
    summary: dict[str, Any]
    points: list[HoldoutPoint]


def regime_figure(store: Store, version: str, choice: RegimeChoice) -> RegimeFigure:
    """Draw one regime with its hold-out errors: the 1-D curve, or the 2-D triangulation."""
    plt = pyplot()
    profile = known_profile(store, version)
    report = run_holdout(store, version, kernel=choice.kernel, path=choice.path,
                         regime_key=choice.regime_key)
    raw_axes, raw_latency = _rows(store, profile.id, choice)
    varying = [i for i in range(raw_axes.shape[1]) if len(np.unique(raw_axes[:, i])) > 1]
    names = path_named(choice.path).axis_names
    if len(varying) <= 1:
        fig = _one_axis(plt, store, version, choice, report.points, raw_axes, raw_latency,
                        varying[0] if varying else 0, names)
    else:
        fig = _two_axes(plt, store, version, choice, report.points, varying[:2], names)
        if len(varying) > 2:
            hidden = ", ".join(names[i] for i in varying[2:])
            fig.axes[0].set_title(f"projection: points that differ only in {hidden} overlap",
                                  fontsize=8)
    title = f"{choice.kernel} · {choice.path} · regime #{choice.rank}\n{_clip(choice.regime_key)}"
    fig.suptitle(title, fontsize=8)
    stats = report.groups[0] if report.groups else None
    summary = {"kernel": choice.kernel, "path": choice.path, "regime_key": choice.regime_key,
               "rank": choice.rank, "points": len(report.points), "varying_axes":
               [names[i] if i < len(names) else f"axis_{i}" for i in varying],
               "ape": stats.ape if stats else None, "nn_ape": stats.nn_ape if stats else None}
    return RegimeFigure(png_bytes(fig), summary, report.points)


def regime_plot(store: Store, version: str, choice: RegimeChoice, out: str | Path) -> dict:
    """Draw one regime with its hold-out errors to ``out`` (PNG); returns a summary."""
    figure = regime_figure(store, version, choice)
    Path(out).write_bytes(figure.png)
    return {**figure.summary, "output": str(out)}


def _clip(text: str, width: int = 140) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _curve(store: Store, version: str, choice: RegimeChoice, fixed: Sequence[float],
           axis: int, xs: np.ndarray) -> np.ndarray:
    """What the store answers along one axis (others fixed), through the real engine."""
    profile = known_profile(store, version)
    path = path_named(choice.path)
    policy = profile.mapping.policy(choice.kernel)
    entry = entry_for(profile.mapping, choice.kernel, choice.path)
    regime = json.loads(choice.regime_key)
    values = []
    for x in xs:
        axes = list(fixed)
        axes[axis] = float(x)
        attempt = store.dispatcher.runner.answer(path, choice.kernel, entry, policy, profile.id,
                                                 Extraction(regime, tuple(axes)))
        values.append(attempt.result.latency_us if attempt.result else math.nan)
    return np.array(values, dtype=float)


def _one_axis(plt: Any, store: Store, version: str, choice: RegimeChoice,
              points: list[HoldoutPoint], raw_axes: np.ndarray, raw_latency: np.ndarray,
              axis: int, names: Sequence[str]) -> Any:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    xs_measured = sorted({p.axes[axis] for p in points})
    grid = np.unique(np.concatenate([np.linspace(xs_measured[0], xs_measured[-1], CURVE_SAMPLES),
                                     xs_measured]))
    curve = _curve(store, version, choice, points[0].axes, axis, grid)
    top.plot(grid, curve, "-", color="tab:blue", lw=1.2, label="store answer (interpolated)")
    top.plot(raw_axes[:, axis], raw_latency, ".", color="0.6", ms=4, label="CSV rows")
    truth = [p for p in points if p.truth_us is not None]
    top.plot([p.axes[axis] for p in truth], [p.truth_us for p in truth], "o", mfc="none",
             color="k", label="measured (merged)")
    held = [p for p in truth if p.predicted_us is not None]
    top.plot([p.axes[axis] for p in held], [p.predicted_us for p in held], "x",
             color="tab:red", label="hold-out prediction")
    top.set_ylabel("latency (us)")
    top.legend(fontsize=7)
    axis_name = names[axis] if axis < len(names) else f"axis_{axis}"
    bottom.plot([p.axes[axis] for p in held], [p.ape for p in held], "x", color="tab:red",
                label="interpolation |error| %")
    near = [p for p in held if p.nn_ape is not None]
    bottom.plot([p.axes[axis] for p in near], [p.nn_ape for p in near], "+", color="tab:green",
                label="nearest-neighbour |error| %")
    for p in truth:
        if p.boundary:
            bottom.axvline(p.axes[axis], color="0.7", ls=":", lw=1)
    bottom.set_xlabel(axis_name + "  (dotted: hull boundary, not answerable)")
    bottom.set_ylabel("|error| %")
    bottom.legend(fontsize=7)
    if _wide(np.array(xs_measured)):
        bottom.set_xscale("log")
    return fig


def _two_axes(plt: Any, store: Store, version: str, choice: RegimeChoice,
              points: list[HoldoutPoint], pair: Sequence[int], names: Sequence[str]) -> Any:
    fig, ax = plt.subplots(figsize=(8, 6.5))
    coords = np.array([[p.axes[i] for i in pair] for p in points], dtype=float)
    unique = np.unique(coords, axis=0)
    policy = known_profile(store, version).mapping.policy(choice.kernel)
    full = np.array([p.axes for p in points], dtype=float)
    geometry = transformed(full, path_named(choice.path), policy)[:, list(pair)]
    geometry = np.unique(geometry, axis=0)
    span = np.ptp(geometry, axis=0)
    from scipy.spatial import Delaunay, QhullError  # only when a 2-D regime is drawn

    try:
        tri = Delaunay((geometry - geometry.min(axis=0)) / np.where(span > 0, span, 1.0))
        ax.triplot(unique[:, 0], unique[:, 1], tri.simplices, color="0.75", lw=0.6)
    except (QhullError, ValueError):
        ax.text(0.02, 0.98, "points do not triangulate (degenerate)", transform=ax.transAxes,
                va="top", fontsize=8)
    answered = [p for p in points if p.ape is not None]
    if answered:
        scatter = ax.scatter([p.axes[pair[0]] for p in answered],
                             [p.axes[pair[1]] for p in answered], c=[p.ape for p in answered],
                             cmap="viridis", s=30, zorder=3)
        fig.colorbar(scatter, ax=ax, label="hold-out |error| %")
    boundary = [p for p in points if p.boundary]
    ax.scatter([p.axes[pair[0]] for p in boundary], [p.axes[pair[1]] for p in boundary],
               marker="s", facecolors="none", edgecolors="k", s=40, zorder=4,
               label="hull boundary (not answerable)")
    missed = [p for p in points if not p.boundary and p.truth_us is not None and p.ape is None]
    ax.scatter([p.axes[pair[0]] for p in missed], [p.axes[pair[1]] for p in missed],
               marker="x", color="tab:red", s=40, zorder=4, label="interior, not answered")
    ax.set_xlabel(names[pair[0]] if pair[0] < len(names) else f"axis_{pair[0]}")
    ax.set_ylabel(names[pair[1]] if pair[1] < len(names) else f"axis_{pair[1]}")
    for column, scale in ((0, ax.set_xscale), (1, ax.set_yscale)):
        if _wide(unique[:, column]):
            scale("log")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _wide(values: np.ndarray) -> bool:
    """Whether an axis spans three decades or more (then drawn on a log scale)."""
    low, high = float(np.min(values)), float(np.max(values))
    return low > 0 and high / low > 1000


def source_distribution_png(replays: Sequence[Any]) -> bytes:
    """Stacked bars: share of calls by source, one bar per replayed workload."""
    plt = pyplot()
    from profstore.evaluation.replay import SOURCES

    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.5 * len(replays)))
    colours = {"MEASURED": "tab:green", "INTERPOLATED": "tab:blue", "PARTIAL": "tab:orange",
               "miss": "tab:red"}
    for row, replay in enumerate(replays):
        left = 0.0
        total = max(replay.calls, 1)
        for source in SOURCES:
            share = replay.source_by_calls.get(source, 0) / total * 100
            ax.barh(row, share, left=left, color=colours[source],
                    label=source if row == 0 else None)
            left += share
    ax.set_yticks(range(len(replays)), [r.workload for r in replays], fontsize=8)
    ax.set_xlabel("% of calls")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.35))
    return png_bytes(fig)


def holdout_png(report: HoldoutReport) -> bytes:
    """Cumulative distribution of hold-out |error| %, one small panel per path on shared
    axes: interpolation (solid) against the nearest-neighbour baseline (dashed)."""
    curves: list[tuple[str, list[float], list[float]]] = []
    for stats in report.paths:
        answered = [p for p in report.points if p.path == stats.path and not p.boundary]
        errors = sorted(p.ape for p in answered if p.ape is not None)
        nearest = sorted(p.nn_ape for p in answered if p.ape is not None and p.nn_ape is not None)
        if errors:
            curves.append((stats.path, errors, nearest))
    plt = pyplot()
    fig, axes = small_multiples(plt, max(len(curves), 1), panel=(2.4, 1.9))
    for ax, (path, errors, nearest) in zip(axes, curves):
        for values, style, label in ((errors, "-", "interpolation"),
                                     (nearest, "--", "nearest neighbour")):
            if values:
                ax.step(values, np.arange(1, len(values) + 1) / len(values), style,
                        where="post", color="tab:blue" if style == "-" else "tab:orange",
                        label=label)
        ax.set_title(f"{path}\n{len(errors)} points", fontsize=7)
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    figure_legend(fig, axes[0])
    fig.supxlabel("|error| % (hold-out)", fontsize=8)
    fig.supylabel("share of answered points", fontsize=8)
    return png_bytes(fig)


def small_multiples(plt: Any, count: int, panel: tuple[float, float] = (2.6, 2.0),
                    columns: int = 4, sharey: bool = True) -> tuple[Any, list[Any]]:
    """A grid of ``count`` panels (unused cells hidden), ``panel`` inches each, sharing
    the x axis (and the y axis unless ``sharey`` is false)."""
    ncols = min(columns, count)
    nrows = math.ceil(count / ncols)
    fig, grid = plt.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=sharey,
                             figsize=(panel[0] * ncols + 0.6, panel[1] * nrows + 0.8))
    cells = list(grid.flat)
    for ax in cells[count:]:
        ax.set_visible(False)
    return fig, cells[:count]


def figure_legend(fig: Any, ax: Any) -> None:
    """One legend for the whole figure, above the panels, never over the data."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, 1.0))
        fig.subplots_adjust(top=1 - 0.7 / fig.get_figheight())
