"""``profstore tensorcast``: TensorCast's own commands, unchanged, on profstore.

Everything runs for real in subprocesses: the ``profstore`` CLI, upstream's parser and
main, its throughput search's worker processes. The expected figures come from the
library path (tests/tensorcast/test_simulator.py builds the same decode step with a
``ProfstoreDataSource`` handed to upstream's runner) and from upstream's own command on the
version's CSV directory, run here beside ours.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from profstore.tensorcast.analytic_check import Observation, check

from tests.tensorcast.cli_runs import (
    best,
    parent_freezes,
    parent_modules,
    profstore,
    profstore_probed,
    upstream,
)
from tests.tensorcast.simulation import DEVICE, V18_DIR, copy_model, require_tensor_cast

pytestmark = pytest.mark.requires_perfdb

QWEN = ["--num-queries", "16", "--query-length", "1", "--context-length", "4096", "--decode",
        "--device", DEVICE, "--tp-size", "8", "--num-devices", "8"]
SEARCH = ["--device", DEVICE, "--num-devices", "8", "--input-length", "1024",
          "--output-length", "256", "--tp-sizes", "4", "8", "--tpot-limit", "50",
          "--batch-range", "48", "64", "-j", "2"]

@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    require_tensor_cast()
    return copy_model("qwen3_dense_32b", tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def text_generate(perfdb_path, model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("text_generate")
    run = profstore_probed("tensorcast", "text-generate", "--db", perfdb_path, "--version",
                           "v0.18", "--stats-json", str(out / "stats.json"), "--fallbacks",
                           str(out / "fallbacks.jsonl"), "--", str(model_dir), *QWEN)
    assert run.returncode == 0, run.stderr[-3000:]
    return run, json.loads((out / "stats.json").read_text()), out / "fallbacks.jsonl"


def test_text_generate_simulates_the_step_the_library_path_does(text_generate):
    run, stats, _ = text_generate
    # the decode step of test_simulator.py's qwen3_32b_tp8 scenario, same data source
    assert "[empirical] Execution time: 0.019413 s" in run.stdout
    assert stats["lookups"] == 85
    assert stats["answers"] == {"INTERPOLATED": 5, "MEASURED": 39}
    assert {r: m["count"] for r, m in stats["misses"].items()} == {
        "regime_mismatch": 21, "unmapped": 18, "outside_range": 1, "outside_convex_hull": 1}
    assert stats["processes_that_looked_up"] == 1 and stats["errors"] == []
    # TensorCast's own label of the 18 unmapped ops, as its own source counts them there
    # (test_simulator.py: upstream's run has "miss:wrapper_unmapped": 18)
    assert stats["misses"]["unmapped"]["tensorcast_labels"] == {"wrapper_unmapped": 18}


def test_the_parent_imports_the_model_runner_only_when_upstream_does(text_generate):
    run, stats, _ = text_generate
    # set-up done, upstream's main() not yet run: no model runner, no --draws/--compare/web
    assert parent_modules(run.stderr) == []
    # profstore's own objects set aside from the collector once, before TensorCast existed
    assert parent_freezes(run.stderr) == [
        {"tensor_cast": False, "runner_module": False, "runners": 0}]
    # then text-generate's main() imported the runner in this one process: profstore priced it
    assert stats["processes_that_looked_up"] == 1 and stats["lookups"] == 85


def test_the_model_runners_imports_are_set_aside_before_any_runner_exists(text_generate):
    run, _, _ = text_generate
    # ADR 0129: a second freeze right after the runner's module is imported, none later
    assert parent_freezes(run.stderr, at_exit=True) == [
        {"tensor_cast": False, "runner_module": False, "runners": 0},
        {"tensor_cast": True, "runner_module": True, "runners": 0}]


def test_the_summary_names_the_fallbacks_by_simulated_time(text_generate):
    run, stats, fallbacks = text_generate
    assert "profstore: 85 lookups" in run.stderr
    items = stats["fallbacks"]
    assert [f["time_us"] for f in items] == sorted((f["time_us"] for f in items), reverse=True)
    for item in items:
        assert item["time_us"] == pytest.approx(item["analytic_us"] * item["calls"])
    # 41 lookups missed; the attention op runs once per layer (64 layers)
    top = items[0]
    assert (top["op"], top["reason"], top["calls"]) == (
        "tensor_cast.attention.default", "outside_convex_hull", 64)
    lines = [json.loads(line) for line in fallbacks.read_text().splitlines()]
    assert len(lines) <= 41 and lines[0]["calls"] == 64
    assert lines[0]["op"] == "tensor_cast.attention.default"


def _parts(split: dict) -> float:
    return sum(split[f"{b}_us"] for b in ("measured", "interpolated", "extrapolated",
                                            "partial", "zero_cost", "calibrated")) + sum(
        split["fallback_us"].values())


def test_time_by_source_splits_the_simulated_step(text_generate):
    run, stats, _ = text_generate
    split = stats["time_by_source"]
    # upstream's own total of the step it simulated, as it prints it
    total_ms = float(re.search(r"Total time for empirical: ([0-9.]+)ms", run.stdout).group(1))
    assert split["total_us"] == pytest.approx(total_ms * 1000, abs=0.5)
    assert _parts(split) == pytest.approx(split["total_us"], rel=1e-12)
    assert sum(split["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    # the fallbacks' analytic time is the fallback table's; their reasons are the misses'
    assert sum(split["fallback_us"].values()) == pytest.approx(stats["fallback_time_us"])
    assert set(split["fallback_us"]) == set(stats["misses"])
    assert sum(split["calls"].values()) == stats["calls"] == 6804
    assert split["extrapolated_us"] == 0.0  # profstore never extrapolates
    assert "time by source: " in run.stderr and "analytic check (" in run.stderr


def test_the_analytic_check_lists_every_class_profstore_answered(text_generate):
    _, stats, _ = text_generate
    check = stats["analytic_check"]
    counted: dict[str, int] = {}
    for item in check["observations"]:
        assert item["kind"] in ("measured", "interpolated")
        assert item["measured_us"] > 0 and item["analytic_us"] > 0
        counted[item["op_class"]] = counted.get(item["op_class"], 0) + 1
    assert {name: c["measured_ops"] for name, c in check["classes"].items()} == counted
    for c in check["classes"].values():
        assert c["ratio_p10"] <= c["ratio_median"] <= c["ratio_p90"]
        assert c["usable"] == (c["measured_ops"] >= 5
                               and c["loo_ape_calibrated"] < c["loo_ape_analytic"])


def _saved_calibration(path: Path) -> Path:
    """A saved run whose only usable class is Mul at a constant ratio 2 (ratios 1, 2, 2, 2,
    4 over analytic 1 … 3: tests/tensorcast/test_analytic_check.py)."""
    observations = [{"op": f"aten.mul.Tensor#{i}", "op_class": "Mul", "kind": "measured",
                     "measured_us": m, "analytic_us": a}
                    for i, (a, m) in enumerate(zip([1.0, 1.5, 2.0, 2.5, 3.0],
                                                   [1.0, 3.0, 4.0, 5.0, 12.0]))]
    found = check([Observation(**o) for o in observations])
    path.write_text(json.dumps({"analytic_check": found.to_json()}))
    return path


def test_calibrated_fallbacks_price_a_usable_class_and_nothing_else(text_generate, perfdb_path,
                                                                     model_dir, tmp_path):
    _, plain, _ = text_generate
    saved = _saved_calibration(tmp_path / "saved.json")
    stats = tmp_path / "calibrated.json"
    run = profstore("tensorcast", "text-generate", "--db", perfdb_path, "--version", "v0.18",
                    "--calibrated-fallbacks", str(saved), "--stats-json", str(stats), "--",
                    str(model_dir), *QWEN)
    assert run.returncode == 0, run.stderr[-3000:]
    calibrated = json.loads(stats.read_text())
    # the Mul ops TensorCast's analytic model priced in the plain run, now at twice that
    mul = sum(plain["time_by_class"]["Mul"]["fallback_us"].values())
    assert mul > 0
    ours, before = calibrated["time_by_source"], plain["time_by_source"]
    assert ours["calibrated_us"] == pytest.approx(2 * mul)
    assert sum(ours["fallback_us"].values()) == pytest.approx(
        sum(before["fallback_us"].values()) - mul)
    assert ours["total_us"] == pytest.approx(before["total_us"] + mul)
    # profstore's own answers are as before
    assert (ours["measured_us"], ours["interpolated_us"]) == (
        before["measured_us"], before["interpolated_us"])
    assert calibrated["answers"] == plain["answers"]


@pytest.mark.sqlite_only
def test_the_fallbacks_file_is_a_workload_gaps_reads(text_generate, perfdb_path, tmp_path):
    _, _, fallbacks = text_generate
    run = profstore("gaps", str(fallbacks), "--db", perfdb_path, "--version", "v0.18",
                    "--json")
    assert run.returncode == 0, run.stderr
    before = json.loads(run.stdout)["before"]
    assert before["total_calls"] == sum(
        json.loads(line)["calls"] for line in fallbacks.read_text().splitlines())
    assert before["calls"] == 0.0  # every shape of the file is one profstore missed


@pytest.fixture(scope="module")
def our_search(perfdb_path, model_dir, tmp_path_factory, request):
    """The search through profstore; on SQLite with --compare (the simulation still uses
    profstore's answers), on PostgreSQL without (workers on a server, not a comparison)."""
    out = tmp_path_factory.mktemp("search")
    compare = request.config.getoption("--backend") == "sqlite"
    options = ["--compare", "--compare-table", str(out / "compare.csv")] if compare else []
    ours = profstore_probed("tensorcast", "throughput-optimizer", "--db", perfdb_path,
                            "--version", "v0.18", "--stats-json", str(out / "stats.json"),
                            *options, "--", str(model_dir), *SEARCH)
    assert ours.returncode == 0, ours.stderr[-3000:]
    return ours, json.loads((out / "stats.json").read_text()), out / "compare.csv"


@pytest.fixture(scope="module")
def upstream_search(model_dir):
    theirs = upstream("cli.inference.throughput_optimizer", str(model_dir), *SEARCH,
                      "--performance-model", "profiling", "--profiling-database-path",
                      str(V18_DIR))
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    return theirs


@pytest.mark.sqlite_only
def test_the_search_picks_upstreams_best_configuration(our_search, upstream_search):
    ours, theirs = our_search[0], upstream_search
    (our_tps, our_config, _), (their_tps, their_config, _) = best(ours.stdout), best(theirs.stdout)
    assert our_config == their_config
    assert our_tps == pytest.approx(their_tps, rel=0.10)


def test_every_worker_looked_up_through_profstore(our_search):
    ours, stats, _ = our_search
    # before main(): no runner (its workers, forked, meet it inside the search), and
    # --compare's module not before the first comparison is made
    assert parent_modules(ours.stderr) == []
    assert stats["processes_that_looked_up"] == 2  # -j 2
    assert stats["errors"] == []
    assert stats["lookups"] == sum(stats["answers"].values()) + sum(
        m["count"] for m in stats["misses"].values())
    assert stats["calls"] > stats["lookups"] > 0
    assert stats["data_sources"] >= 2


PD_RATIO = ["--device", DEVICE, "--num-devices", "16", "--input-length", "1024",
            "--output-length", "256", "--enable-optimize-prefill-decode-ratio",
            "--prefill-devices-per-instance", "8", "--decode-devices-per-instance", "8",
            "--tp-sizes", "8", "--batch-range", "32", "33", "--ttft-limit", "2000",
            "--tpot-limit", "50", "-j", "1"]


def test_spawned_workers_answer_through_profstore(perfdb_path, model_dir, tmp_path):
    """The PD-ratio search runs its prefill and its decode phase each in its own pool
    started with spawn (one worker each, -j 1; TP 8 on 8 devices: one configuration,
    so one runner, per phase): each spawned worker installs profstore itself."""
    run = profstore_probed("tensorcast", "throughput-optimizer", "--db", perfdb_path,
                           "--version", "v0.18", "--stats-json", str(tmp_path / "stats.json"),
                           "--", str(model_dir), *PD_RATIO)
    assert run.returncode == 0, run.stderr[-3000:]
    assert parent_modules(run.stderr) == []
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert (stats["processes_that_looked_up"], stats["data_sources"]) == (2, 2)
    assert stats["errors"] == [] and stats["answers"].get("MEASURED", 0) > 0


@pytest.mark.sqlite_only
def test_compare_explains_every_difference(our_search):
    ours, stats, table = our_search
    with open(table, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and "unexplained" not in {r["rule"] for r in rows}
    assert sum(int(r["calls"]) for r in rows) == stats["lookups"]
    differ = [r for r in rows if r["rule"] != "same"]
    assert differ, "the two sources never differ: the comparison compares nothing"
    counts = re.search(r"compare: (\d+) distinct op answers \((\d+) lookups\), (\d+) agree",
                       ours.stderr)
    assert counts and (int(counts.group(1)), int(counts.group(3))) == (
        len(rows), len(rows) - len(differ))


def test_the_search_splits_its_time_per_configuration_and_for_the_best(our_search):
    ours, stats, _ = our_search
    _, label, _ = best(ours.stdout)
    assert stats["best_configuration"] == label
    configurations = stats["time_by_configuration"]
    assert len(configurations) == 2  # TP 4 and TP 8
    assert sum(c["total_us"] for c in configurations.values()) == pytest.approx(
        stats["time_by_source"]["total_us"])
    best_split = stats["best_time_by_source"]
    assert best_split in configurations.values()
    for split in (stats["time_by_source"], best_split):
        assert _parts(split) == pytest.approx(split["total_us"], rel=1e-12)
        assert sum(split["shares"].values()) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.sqlite_only
def test_compare_splits_upstreams_time_over_the_same_calls(our_search):
    _, stats, _ = our_search
    ours, theirs = stats["time_by_source"], stats["upstream_time_by_source"]
    assert sum(theirs["calls"].values()) == sum(ours["calls"].values()) == stats["calls"]
    assert _parts(theirs) == pytest.approx(theirs["total_us"], rel=1e-12)
    assert sum(theirs["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    assert theirs["total_us"] != ours["total_us"]


# --- bad input: one line, non-zero, nothing written ---------------------------------------

@pytest.mark.parametrize(("words", "message"), [
    (["tensorcast", "text-generate", "--version", "v0.18", "MODEL"],
     "put TensorCast's own arguments after --"),
    (["tensorcast", "text-generate", "--version", "v9.9", "--", "MODEL"],
     "unknown version 'v9.9'"),
    (["tensorcast", "text-generate", "--version", "v0.18", "--", "MODEL",
      "--profiling-database-path", "x"], "--profiling-database-path: profstore tensorcast sets"),
    (["tensorcast", "text-generate", "--version", "v0.18", "--", "MODEL",
      "--performance-model=analytic"], "--performance-model: profstore tensorcast sets"),
    (["tensorcast", "text-generate", "--version", "v0.18", "--tensorcast-root", "/nonexistent",
      "--", "MODEL"], "--tensorcast-root /nonexistent: no tensor_cast/ folder there"),
    (["tensorcast", "throughput-optimizer", "--version", "v0.18", "--", "MODEL",
      "--tp-sizes", "four"], "TensorCast refused its arguments:"),
    (["tensorcast", "text-generate", "--version", "v0.18", "--calibrated-fallbacks",
      "missing.json", "--", "MODEL"],
     "--calibrated-fallbacks missing.json: not a profstore tensorcast --stats-json file"),
    (["tensorcast", "text-generate", "--context", "{\"phase\": \"lunch\"}", "--version",
      "v0.18", "--", "MODEL"], "phase"),
])
def test_bad_input_is_one_line_and_writes_nothing(perfdb_path, tmp_path, words, message):
    require_tensor_cast()
    stats = tmp_path / "stats.json"
    run = profstore(*words[:2], "--db", perfdb_path, "--stats-json", str(stats), *words[2:],
                    cwd=tmp_path)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profstore: error: ") and message in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_command_is_refused_by_the_parser(perfdb_path):
    run = profstore("tensorcast", "image-generate", "--db", perfdb_path, "--", "MODEL")
    assert run.returncode == 2 and "invalid choice: 'image-generate'" in run.stderr


@pytest.mark.sqlite_only
def test_a_database_without_the_version_lists_what_it_holds(tmp_path):
    from profstore.storage.engines import make_engine, upgrade

    empty = tmp_path / "empty.db"
    engine = make_engine(empty)
    upgrade(engine)
    engine.dispose()
    run = profstore("tensorcast", "text-generate", "--db", str(empty), "--", "MODEL")
    assert run.returncode == 1
    assert run.stderr.strip() == ("profstore: error: --version: the database holds none; "
                                  "name one")


def test_an_upstream_that_is_not_importable_is_one_line(perfdb_path, tmp_path):
    fake = tmp_path / "tc"
    (fake / "tensor_cast").mkdir(parents=True)  # a folder, but nothing to import
    (fake / "tensor_cast" / "__init__.py").write_text("raise ImportError('broken install')\n")
    run = profstore("tensorcast", "text-generate", "--db", perfdb_path, "--version", "v0.18",
                    "--tensorcast-root", str(fake), "--", "MODEL")
    assert run.returncode == 1
    assert run.stderr.strip() == (f"profstore: error: TensorCast is not importable in {fake}: "
                                  "ImportError: broken install")

