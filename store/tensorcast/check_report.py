"""The analytic check as people read it: a table per op class, and a figure.

The figure has two panels: the simulated time of the top op classes split by source
(stacked bars: what the data priced, what TensorCast's analytic model guessed), and, per
class with at least ``MIN_OPS`` answered ops, measured against analytic time on log axes
with the line where they agree.
"""

from __future__ import annotations

from typing import Any

from profstore.tensorcast.analytic_check import MIN_OPS

COLOURS = {"measured": "tab:green", "interpolated": "tab:blue", "partial": "tab:orange",
           "zero_cost": "tab:gray", "calibrated": "tab:purple", "fallback": "tab:red"}
"""One colour per bucket of time by source (every fallback reason in red)."""
LABEL = 36
"""The most characters of an op class's name on the figure."""


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def check_lines(check: dict[str, Any], top: int = 20) -> list[str]:
    """The per-class table, the classes with the most answered ops first."""
    classes = check["classes"]
    if not classes:
        return ["  analytic check: profstore answered no op with a positive latency"]
    usable = [name for name, c in classes.items() if c["usable"]]
    lines = [f"  analytic check (TensorCast's analytic model against the data, "
             f"{len(check['observations'])} answered ops in {len(classes)} op classes; "
             f"{len(usable)} usable: >= {MIN_OPS} ops, calibrated error below the raw one):",
             f"    {'OP CLASS':<36} {'OPS':>4} {'RATIO':>7} {'P10':>7} {'P90':>7} "
             f"{'APE RAW':>8} {'APE CAL':>8}  USABLE"]
    for name, c in list(classes.items())[:top]:
        lines.append(f"    {name[:36]:<36} {c['measured_ops']:>4} {c['ratio_median']:>7.3f} "
                     f"{c['ratio_p10']:>7.3f} {c['ratio_p90']:>7.3f} "
                     f"{_percent(c['loo_ape_analytic']):>8} "
                     f"{_percent(c['loo_ape_calibrated']):>8}  "
                     f"{'yes' if c['usable'] else 'no'}")
    return lines


def _bucket_parts(split: dict[str, Any]) -> dict[str, float]:
    parts = {key: split[f"{key}_us"] for key in COLOURS if key != "fallback"}
    parts["fallback"] = sum(split["fallback_us"].values())
    return parts


def plot(data: dict[str, Any], path: str, top: int = 20) -> None:
    """Write the figure (module docstring) as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(15, 0.35 * top + 2.5))
    _time_panel(left, data["time_by_class"], top)
    _ratio_panel(right, data["analytic_check"], top)
    figure.suptitle("Where the simulated time comes from, and TensorCast's analytic model "
                    "against the data")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _time_panel(axes: Any, by_class: dict[str, Any], top: int) -> None:
    names = list(by_class)[:top][::-1]
    labels = [name if len(name) <= LABEL else name[:LABEL - 1] + "…" for name in names]
    starts = [0.0] * len(names)
    for bucket, colour in COLOURS.items():
        widths = [_bucket_parts(by_class[name])[bucket] for name in names]
        axes.barh(labels, widths, left=starts, color=colour, label=bucket.replace("_", "-"))
        starts = [a + b for a, b in zip(starts, widths)]
    axes.set_xlim(0, max(starts, default=0.0) * 1.05 or 1.0)
    axes.tick_params(axis="y", labelsize="small")
    axes.set_xlabel("simulated time (us, all calls)")
    axes.set_title(f"time by source, top {len(names)} op classes")
    axes.legend(loc="lower right", fontsize="small")


def _ratio_panel(axes: Any, check: dict[str, Any], top: int) -> None:
    shown = [name for name, c in check["classes"].items() if c["measured_ops"] >= MIN_OPS]
    shown = shown[:top]
    values: list[float] = []
    for name in shown:
        points = [o for o in check["observations"] if o["op_class"] == name]
        xs, ys = [o["analytic_us"] for o in points], [o["measured_us"] for o in points]
        values += xs + ys
        usable = "usable" if check["classes"][name]["usable"] else "not usable"
        axes.scatter(xs, ys, s=14, label=f"{name} ({len(points)}, {usable})")
    if values:
        low, high = min(values) / 1.5, max(values) * 1.5
        axes.plot([low, high], [low, high], color="black", linewidth=0.8, label="measured = "
                  "analytic")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("TensorCast analytic (us per call)")
    axes.set_ylabel("profstore answer from rows (us per call)")
    axes.set_title(f"measured vs analytic, classes with >= {MIN_OPS} ops")
    axes.legend(fontsize="x-small", loc="upper left")
