"""The version diff as a figure: one small panel per kernel, the histogram of its latency
ratios (to / from, log scale) at the coordinates both versions measure, 1.0 marked."""

from __future__ import annotations

import io
import math

from profstore.evaluation.diff import DiffReport
from profstore.evaluation.plot import PlotError, pyplot

COLUMNS = 6
MAX_PANELS = 48


def ratio_figure(report: DiffReport, *, max_panels: int = MAX_PANELS) -> bytes:
    """PNG bytes; kernels with the most shared coordinates first (at most ``max_panels``)."""
    kernels = sorted((k for k in report.kernels if k.log_ratios),
                     key=lambda k: (-len(k.log_ratios), k.kernel))[:max_panels]
    if not kernels:
        raise PlotError(f"{report.from_version} and {report.to_version} share no measured "
                        "coordinate: nothing to plot")
    plt = pyplot()
    rows = math.ceil(len(kernels) / COLUMNS)
    columns = min(COLUMNS, len(kernels))
    fig, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 2.0 * rows),
                             squeeze=False, sharex=True)
    every = [v for k in kernels for v in k.log_ratios]
    low, high = min(min(every), -0.05), max(max(every), 0.05)
    for ax, kernel in zip(axes.flat, kernels):
        ax.hist(kernel.log_ratios, bins=20, range=(low, high), color="tab:blue")
        ax.axvline(0.0, color="black", linewidth=0.8)
        median = kernel.ratios.median if kernel.ratios else None
        ax.set_title(f"{kernel.kernel[:24]}\nn={len(kernel.log_ratios)}"
                     + (f" median {median:.3f}" if median else ""), fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(kernels):]:
        ax.axis("off")
    fig.suptitle(f"latency ratio {report.to_version} / {report.from_version} "
                 "(ln; 0 = unchanged) per kernel", fontsize=9)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return buffer.getvalue()
