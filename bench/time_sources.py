"""Where two reference searches' simulated time comes from, and how wrong the analytic rest
is: time by source (profstore and upstream's CSV source, ``--compare``), the analytic
check per op class, and ``--draws 3`` with the fallbacks' error from the check and without
it (``--fallback-error 0``).

    python -m bench.time_sources [--db perf.db] [--out DIR] [--from DIR]

It runs ``profstore tensorcast throughput-optimizer`` four times — the dense reference
search (Qwen3-32B, TP 4/8, batch 1-64, TPOT <= 50 ms) and ``qwen3_moe_30b_a3b`` (TP 1/2,
EP 4/8, batch 1-32, TPOT <= 50 ms), each with ``--compare --draws 3`` and with ``--draws 3
--fallback-error 0`` — and writes ``bench/results/time-sources-<commit>.md`` from their
``--stats-json`` files. ``--from DIR`` renders the files of an earlier run
(``<search>-draws.json``, ``<search>-draws0.json``) without running anything.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.bench_tensorcast import REPO, TENSOR_CAST, _environment, _ingest, _model_dir

SEARCHES = {
    "ref": ("qwen3_dense_32b", ["--tp-sizes", "4", "8", "--batch-range", "1", "64"]),
    "moe": ("qwen3_moe_30b_a3b", ["--tp-sizes", "1", "2", "--ep-sizes", "4", "8",
                                  "--batch-range", "1", "32"]),
}
COMMON = ["--device", "ATLAS_800_A3_752T_128G_DIE", "--num-devices", "8", "--input-length",
          "1024", "--output-length", "256", "--tpot-limit", "50", "-j", "2"]
VARIANTS = {"draws": ["--compare", "--draws", "3"],
            "draws0": ["--draws", "3", "--fallback-error", "0"]}


def run_all(db: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as models:
        for name, (model, options) in SEARCHES.items():
            model_dir = _model_dir(model, Path(models))
            for variant, extra in VARIANTS.items():
                stats = out / f"{name}-{variant}.json"
                words = [sys.executable, "-m", "profstore", "tensorcast",
                         "throughput-optimizer", "--db", db, "--version", "v0.18",
                         "--compare-table", str(out / f"{name}-compare.csv"), *extra,
                         "--stats-json", str(stats), "--", str(model_dir), *COMMON, *options]
                done = subprocess.run(words, capture_output=True, text=True,
                                      env=_environment(), cwd=REPO)
                if done.returncode != 0:
                    raise SystemExit(f"{name} {variant}: {done.stderr[-2000:]}")


def _split_row(label: str, split: dict[str, Any]) -> str:
    shares = split["shares"]
    reasons = ", ".join(f"{r} {100 * us / split['total_us']:.1f}" for r, us in sorted(
        split["fallback_us"].items(), key=lambda item: -item[1]))
    return (f"| {label} | {split['total_us']:.0f} | {100 * shares['measured']:.1f} | "
            f"{100 * shares['interpolated']:.1f} | {100 * shares['extrapolated']:.1f} | "
            f"{100 * shares['zero_cost']:.1f} | {100 * shares['fallback']:.1f} | {reasons} |")


def _draws_row(label: str, draws: dict[str, Any]) -> str:
    fallback = draws["fallback_error"]
    best = draws["nominal_best"].replace(" | ", ", ")
    return (f"| {label} | {best} | {draws['nominal_best_throughput']:.1f} | "
            f"[{draws['best_throughput_p10']:.1f}, {draws['best_throughput_p90']:.1f}] | "
            f"{'yes' if draws['robust'] else 'no'} | {fallback['source']} | "
            f"{100 * fallback['winner_variance_share']:.1f} |")


def render(name: str, with_error: dict[str, Any], without: dict[str, Any]) -> list[str]:
    out = [f"## {name}", "", "Time by source (% of the simulated time; fallback reasons in "
           "% of the total):", "",
           "| source | total us | measured | interpolated | extrapolated | zero-cost | "
           "fallback | fallback by reason |", "|---|---|---|---|---|---|---|---|",
           _split_row("profstore, run", with_error["time_by_source"]),
           _split_row("profstore, best configuration", with_error["best_time_by_source"])]
    if "upstream_time_by_source" in with_error:
        out.append(_split_row("upstream CSV source, run", with_error["upstream_time_by_source"]))
        if with_error.get("upstream_best_time_by_source"):
            out.append(_split_row("upstream CSV source, best configuration",
                                  with_error["upstream_best_time_by_source"]))
    out += ["", "The analytic check (leave-one-out median absolute percentage error):", "",
            "| op class | ops | ratio median | p10 | p90 | APE raw | APE calibrated | usable |",
            "|---|---|---|---|---|---|---|---|"]
    for cls, c in with_error["analytic_check"]["classes"].items():
        calibrated = c["loo_ape_calibrated"]
        out.append(f"| {cls} | {c['measured_ops']} | {c['ratio_median']:.3f} | "
                   f"{c['ratio_p10']:.3f} | {c['ratio_p90']:.3f} | "
                   f"{100 * c['loo_ape_analytic']:.1f} | "
                   f"{'-' if calibrated is None else f'{100 * calibrated:.1f}'} | "
                   f"{'yes' if c['usable'] else 'no'} |")
    out += ["", "`--draws 3` (seed 0):", "",
            "| fallback error | nominal best | tok/s | best p10-p90 | robust | source | "
            "fallbacks' share of the winner's variance % |", "|---|---|---|---|---|---|---|",
            _draws_row("from the analytic check (default)", with_error["draws"]),
            _draws_row("none (`--fallback-error 0`)", without["draws"]), ""]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="an ingested database (default: ingest ../shared/perfdb)")
    parser.add_argument("--out", help="where the stats files go (default: a temporary folder)")
    parser.add_argument("--from", dest="source", help="render the stats files of DIR")
    parser.add_argument("--commit", help="with --from: the commit that ran them (default: "
                                         "this checkout's)")
    args = parser.parse_args(argv)
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True,
                                           cwd=REPO).stdout.strip()
    folder = Path(args.source or args.out or tempfile.mkdtemp(prefix="time-sources-"))
    if args.source is None:
        folder.mkdir(parents=True, exist_ok=True)
        run_all(args.db or _ingest(folder), folder)
    lines = [f"# Time by source and the analytic check ({commit})", "",
             "From `python -m bench.time_sources`; TensorCast from "
             f"`{TENSOR_CAST.name}`, version v0.18.", ""]
    for name in SEARCHES:
        load = [json.loads((folder / f"{name}-{v}.json").read_text()) for v in VARIANTS]
        lines += render(f"{name}: {SEARCHES[name][0]}", *load)
    target = REPO / "bench" / "results" / f"time-sources-{commit}.md"
    target.write_text("\n".join(lines), encoding="utf-8")
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
