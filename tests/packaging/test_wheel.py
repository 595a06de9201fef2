"""The built wheel installs as one import package and works next to look-alike folders.

A user's project often has its own ``store/``, ``ingest/`` or ``migrations/`` package (a
Django, Flask or Alembic project; TensorCast's web UI has ``migrations/``). The wheel is
built from this checkout, installed into a fresh virtualenv, and run from a directory that
holds such decoys, with that directory first on ``PYTHONPATH``.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib

from tests.support.paths import REPO

pytestmark = pytest.mark.no_database

DECOYS = ("store", "ingest", "migrations")
LEAF = {"op": "tensor_cast.rms_norm.default",
        "args": [{"shape": [2, 7168], "dtype": "bfloat16"},
                 {"shape": [7168], "dtype": "bfloat16"}, 1e-6],
        "outputs": [{"shape": [2, 7168], "dtype": "bfloat16"}]}


def project_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done


@dataclass(frozen=True)
class WheelBuild:
    path: Path
    output: str
    """What ``pip wheel --quiet`` printed: the build backend's warnings, nothing else."""


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> WheelBuild:
    out = tmp_path_factory.mktemp("wheel")
    done = run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out),
                str(REPO)], cwd=out, env=dict(os.environ))
    return WheelBuild(next(out.glob("profstore-*.whl")), done.stdout + done.stderr)


@pytest.fixture(scope="module")
def wheel(wheel_build: WheelBuild) -> Path:
    return wheel_build.path


def _borrow_dependencies(python: Path) -> None:
    """Make this environment's third-party packages (SQLAlchemy, numpy, …) visible to the
    fresh virtualenv without downloading them: a ``.pth`` line adds the directory, and
    Python does not run the ``.pth`` files inside it, so this checkout's editable hook
    stays out and ``profstore`` can only come from the wheel."""
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               cwd=python.parent, env={}).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "borrowed-dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A fresh virtualenv with the wheel, and a working directory full of decoys."""
    root = tmp_path_factory.mktemp("fresh")
    venv.create(root / "venv", with_pip=True)
    python = root / "venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], cwd=root,
        env=env)
    _borrow_dependencies(python)
    work = root / "project"
    for name in DECOYS:
        (work / name).mkdir(parents=True)
        (work / name / "__init__.py").write_text(
            f"raise ImportError('decoy {name} package was imported')\n")
    env["PYTHONPATH"] = str(work)
    return work, env


def test_the_wheel_holds_one_top_level_package_with_its_migrations(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"profstore"}
    assert "profstore/py.typed" in names
    assert "profstore/migrations/env.py" in names
    assert "profstore/migrations/script.py.mako" in names
    assert any(n.startswith("profstore/migrations/versions/0001_") for n in names)
    web = {n for n in names if n.startswith("profstore/web/")}
    assert {"profstore/web/metadata.yaml", "profstore/web/plugin.py",
            "profstore/web/templates/profstore_regime.html",
            "profstore/web/templates/profstore_explain.html"} <= web


def test_the_build_prints_no_warning_about_our_packaging(wheel_build):
    """setuptools warned "Package would be ignored" for the templates folder while it was
    package data of profstore.web rather than a package of its own."""
    warnings = [line.strip() for line in wheel_build.output.splitlines() if "Warning" in line]
    assert warnings == []


def test_demo_and_lookup_run_from_the_wheel_beside_decoy_packages(installed):
    work, env = installed
    venv_bin = work.parent / "venv" / "bin"
    run([str(venv_bin / "profstore"), "demo", "--dir", "demo"], cwd=work, env=env)
    demo = work / "demo"
    with (next((demo / "data").glob("*/vllm_ascend/*/RmsNorm.csv"))).open() as handle:
        measured = {row["Input Shapes"].strip('"'): float(row["Average Duration(us)"])
                    for row in csv.DictReader(handle)}
    expected = measured["2,7168;7168"]
    (work / "leaves.jsonl").write_text(json.dumps({"id": "rms", **LEAF}) + "\n")
    done = run([str(venv_bin / "python"), "-m", "profstore", "lookup", "--db",
                str(demo / "demo.db"), "--version", "v0.18", "leaves.jsonl"], cwd=work, env=env)
    answer = json.loads(done.stdout)
    assert (answer["id"], answer["latency_us"], answer["source"]) == ("rms", expected, "MEASURED")
    script = ("import json, profstore\n"
              "from profstore import LeafOp, Store\n"
              f"leaf = LeafOp.from_json({json.dumps(LEAF)!r})\n"
              "with Store.open('demo/demo.db') as s:\n"
              "    r = s.lookup(leaf, version='v0.18')\n"
              "print(json.dumps([profstore.__version__, r.latency_us, r.source.value]))\n")
    done = run([str(venv_bin / "python"), "-c", script], cwd=work, env=env)
    assert json.loads(done.stdout) == [project_version(), expected, "MEASURED"]


def test_version_flag_names_the_installed_distribution(installed):
    work, env = installed
    done = run([str(work.parent / "venv" / "bin" / "profstore"), "--version"],
               cwd=work, env=env)
    assert done.stdout.strip() == f"profstore {project_version()}"


def test_profstore_resolves_to_the_wheel_not_the_checkout(installed):
    work, env = installed
    done = run([str(work.parent / "venv" / "bin" / "python"), "-c",
                "import profstore, profstore.ingest, profstore.migrations; "
                "print(profstore.__file__); print(profstore.migrations.__file__)"],
               cwd=work, env=env)
    venv_root = str(work.parent / "venv")
    assert [line.startswith(venv_root) for line in done.stdout.split()] == [True, True]
